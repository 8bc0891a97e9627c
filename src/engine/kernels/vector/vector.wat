;; The row operations of a decode step's blocks (bias and residual adds, the experts' weighted mix,
;; RMSNorm), four or two lanes at a time over byte offsets into the imported shared memory. Each lane
;; does what the plain loops (./vector-ops.ts, ../rmsnorm.ts) do, in f32 or f64 as they do (no fused
;; multiply-add), so the bits are the same; counts need not be multiples of the lanes (a scalar tail
;; finishes).
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

  ;; rms_norm(x, out, w, rows, dim, eps): per row of dim f32 at x, f64 ss = Σ x[i]² in ascending i,
  ;; inv = 1 / sqrt(ss / dim + eps), out[i] = f32((x[i] · inv) · w[i]) (out may be x). The sums are
  ;; serial chains: rows go four at a time, two f64 lanes (rows) in each of two accumulators, so four
  ;; chains run at once; past the last row the lanes repeat it and are not stored.
  (func (export "rms_norm")
    (param $x i32) (param $out i32) (param $w i32) (param $rows i32) (param $dim i32) (param $eps f64)
    (local $r i32) (local $last i32) (local $rowBytes i32) (local $i i32) (local $end i32)
    (local $a0 i32) (local $a1 i32) (local $b0 i32) (local $b1 i32)
    (local $ssA v128) (local $ssB v128) (local $v v128) (local $invA v128) (local $invB v128)
    (if (i32.eqz (local.get $rows)) (then (return)))
    (local.set $last (i32.sub (local.get $rows) (i32.const 1)))
    (local.set $rowBytes (i32.shl (local.get $dim) (i32.const 2)))
    (loop $fours
      ;; Byte offsets of the four rows' starts (relative to x and out alike).
      (local.set $a0 (i32.mul (local.get $r) (local.get $rowBytes)))
      (local.set $a1 (i32.mul (call $min (i32.add (local.get $r) (i32.const 1)) (local.get $last)) (local.get $rowBytes)))
      (local.set $b0 (i32.mul (call $min (i32.add (local.get $r) (i32.const 2)) (local.get $last)) (local.get $rowBytes)))
      (local.set $b1 (i32.mul (call $min (i32.add (local.get $r) (i32.const 3)) (local.get $last)) (local.get $rowBytes)))
      (local.set $ssA (v128.const f64x2 0 0))
      (local.set $ssB (v128.const f64x2 0 0))
      (local.set $i (i32.add (local.get $x) (local.get $a0)))
      (local.set $end (i32.add (local.get $i) (local.get $rowBytes)))
      ;; i walks row a0; the other rows are at fixed distances from it.
      (local.set $a1 (i32.sub (local.get $a1) (local.get $a0)))
      (local.set $b0 (i32.sub (local.get $b0) (local.get $a0)))
      (local.set $b1 (i32.sub (local.get $b1) (local.get $a0)))
      (if (i32.lt_u (local.get $i) (local.get $end))
        (then
          (loop $sum
            (local.set $v (f64x2.promote_low_f32x4
              (f32x4.replace_lane 1 (v128.load32_zero (local.get $i))
                (f32.load (i32.add (local.get $i) (local.get $a1))))))
            (local.set $ssA (f64x2.add (local.get $ssA) (f64x2.mul (local.get $v) (local.get $v))))
            (local.set $v (f64x2.promote_low_f32x4
              (f32x4.replace_lane 1 (v128.load32_zero (i32.add (local.get $i) (local.get $b0)))
                (f32.load (i32.add (local.get $i) (local.get $b1))))))
            (local.set $ssB (f64x2.add (local.get $ssB) (f64x2.mul (local.get $v) (local.get $v))))
            (br_if $sum (i32.lt_u
              (local.tee $i (i32.add (local.get $i) (i32.const 4)))
              (local.get $end))))))
      (local.set $invA (f64x2.div (v128.const f64x2 1 1) (f64x2.sqrt (f64x2.add
        (f64x2.div (local.get $ssA) (f64x2.splat (f64.convert_i32_u (local.get $dim))))
        (f64x2.splat (local.get $eps))))))
      (local.set $invB (f64x2.div (v128.const f64x2 1 1) (f64x2.sqrt (f64x2.add
        (f64x2.div (local.get $ssB) (f64x2.splat (f64.convert_i32_u (local.get $dim))))
        (f64x2.splat (local.get $eps))))))
      (local.set $a1 (i32.add (local.get $a1) (local.get $a0)))
      (local.set $b0 (i32.add (local.get $b0) (local.get $a0)))
      (local.set $b1 (i32.add (local.get $b1) (local.get $a0)))
      (call $scale_row (i32.add (local.get $x) (local.get $a0)) (i32.add (local.get $out) (local.get $a0))
        (local.get $w) (local.get $dim) (f64x2.extract_lane 0 (local.get $invA)))
      (if (i32.gt_u (local.get $a1) (local.get $a0))
        (then (call $scale_row (i32.add (local.get $x) (local.get $a1)) (i32.add (local.get $out) (local.get $a1))
          (local.get $w) (local.get $dim) (f64x2.extract_lane 1 (local.get $invA)))))
      (if (i32.gt_u (local.get $b0) (local.get $a1))
        (then (call $scale_row (i32.add (local.get $x) (local.get $b0)) (i32.add (local.get $out) (local.get $b0))
          (local.get $w) (local.get $dim) (f64x2.extract_lane 0 (local.get $invB)))))
      (if (i32.gt_u (local.get $b1) (local.get $b0))
        (then (call $scale_row (i32.add (local.get $x) (local.get $b1)) (i32.add (local.get $out) (local.get $b1))
          (local.get $w) (local.get $dim) (f64x2.extract_lane 1 (local.get $invB)))))
      (br_if $fours (i32.lt_u
        (local.tee $r (i32.add (local.get $r) (i32.const 4)))
        (local.get $rows)))))

  (func $min (param $a i32) (param $b i32) (result i32)
    (select (local.get $a) (local.get $b) (i32.lt_u (local.get $a) (local.get $b))))

  ;; out[i] = f32((x[i] · inv) · w[i]) for i < dim, two at a time in f64.
  (func $scale_row (param $x i32) (param $out i32) (param $w i32) (param $dim i32) (param $inv f64)
    (local $i i32) (local $pairs i32) (local $invs v128)
    (local.set $invs (f64x2.splat (local.get $inv)))
    (local.set $pairs (i32.shl (i32.and (local.get $dim) (i32.const -2)) (i32.const 2)))
    (block $done
      (loop $two
        (br_if $done (i32.ge_u (local.get $i) (local.get $pairs)))
        (v128.store64_lane 0 (i32.add (local.get $out) (local.get $i))
          (f32x4.demote_f64x2_zero (f64x2.mul
            (f64x2.mul
              (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $x) (local.get $i))))
              (local.get $invs))
            (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $w) (local.get $i)))))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $two)))
    (if (i32.lt_u (local.get $i) (i32.shl (local.get $dim) (i32.const 2)))
      (then
        (f32.store (i32.add (local.get $out) (local.get $i))
          (f32.demote_f64 (f64.mul
            (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $x) (local.get $i)))) (local.get $inv))
            (f64.promote_f32 (f32.load (i32.add (local.get $w) (local.get $i))))))))))
)
