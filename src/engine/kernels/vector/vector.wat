;; The elementwise sums of a decode step's blocks (bias and residual adds, the experts' weighted
;; mix), four or two lanes at a time over byte offsets into the imported shared memory. Each lane
;; does what ./vector-ops.ts's plain loops do, in f32 or f64 as they do (no fused multiply-add), so
;; the bits are the same; counts need not be multiples of the lanes (a scalar tail finishes).
(module
  (import "env" "memory" (memory 1 65536 shared))

  ;; add_f32(dst, src, count): f32 dst[i] += src[i] for i < count.
  (func (export "add_f32") (param $dst i32) (param $src i32) (param $count i32)
    (local $i i32) (local $quads i32) (local $end i32)
    (local.set $end (i32.shl (local.get $count) (i32.const 2)))
    (local.set $quads (i32.and (local.get $end) (i32.const -16)))
    (block $done
      (loop $four
        (br_if $done (i32.ge_u (local.get $i) (local.get $quads)))
        (v128.store (i32.add (local.get $dst) (local.get $i))
          (f32x4.add
            (v128.load (i32.add (local.get $dst) (local.get $i)))
            (v128.load (i32.add (local.get $src) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $four)))
    (block $tailDone
      (loop $one
        (br_if $tailDone (i32.ge_u (local.get $i) (local.get $end)))
        (f32.store (i32.add (local.get $dst) (local.get $i))
          (f32.add
            (f32.load (i32.add (local.get $dst) (local.get $i)))
            (f32.load (i32.add (local.get $src) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $one))))

  ;; add_weighted(sums, w, y, count): f64 sums[i] += w · y[i] (f32 y widened) for i < count.
  (func (export "add_weighted") (param $sums i32) (param $w f64) (param $y i32) (param $count i32)
    (local $i i32) (local $pairs i32) (local $ws v128)
    (local.set $ws (f64x2.splat (local.get $w)))
    (local.set $pairs (i32.and (local.get $count) (i32.const -2)))
    (block $done
      (loop $two
        (br_if $done (i32.ge_u (local.get $i) (local.get $pairs)))
        (v128.store (i32.add (local.get $sums) (i32.shl (local.get $i) (i32.const 3)))
          (f64x2.add
            (v128.load (i32.add (local.get $sums) (i32.shl (local.get $i) (i32.const 3))))
            (f64x2.mul (local.get $ws)
              (f64x2.promote_low_f32x4
                (v128.load64_zero (i32.add (local.get $y) (i32.shl (local.get $i) (i32.const 2))))))))
        (local.set $i (i32.add (local.get $i) (i32.const 2)))
        (br $two)))
    (if (i32.lt_u (local.get $i) (local.get $count))
      (then
        (f64.store (i32.add (local.get $sums) (i32.shl (local.get $i) (i32.const 3)))
          (f64.add
            (f64.load (i32.add (local.get $sums) (i32.shl (local.get $i) (i32.const 3))))
            (f64.mul (local.get $w)
              (f64.promote_f32 (f32.load (i32.add (local.get $y) (i32.shl (local.get $i) (i32.const 2)))))))))))

  ;; add_sums(out, sums, count): f32 out[i] = out[i] + sums[i], summed in f64 and rounded once.
  (func (export "add_sums") (param $out i32) (param $sums i32) (param $count i32)
    (local $i i32) (local $pairs i32) (local $at i32)
    (local.set $pairs (i32.and (local.get $count) (i32.const -2)))
    (block $done
      (loop $two
        (br_if $done (i32.ge_u (local.get $i) (local.get $pairs)))
        (local.set $at (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2))))
        (v128.store64_lane 0 (local.get $at)
          (f32x4.demote_f64x2_zero
            (f64x2.add
              (f64x2.promote_low_f32x4 (v128.load64_zero (local.get $at)))
              (v128.load (i32.add (local.get $sums) (i32.shl (local.get $i) (i32.const 3)))))))
        (local.set $i (i32.add (local.get $i) (i32.const 2)))
        (br $two)))
    (if (i32.lt_u (local.get $i) (local.get $count))
      (then
        (local.set $at (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2))))
        (f32.store (local.get $at)
          (f32.demote_f64
            (f64.add
              (f64.promote_f32 (f32.load (local.get $at)))
              (f64.load (i32.add (local.get $sums) (i32.shl (local.get $i) (i32.const 3))))))))))
)
