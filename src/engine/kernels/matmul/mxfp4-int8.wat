;; MXFP4 rows dotted with an input quantized to int8 (the integer MXFP4 matmul, `mxfp4=int8`):
;;
;;   mxfp4_int8(K, M, q, qs, blocks, scales, halfScales, o, N, ldo): for n < N, m < M:
;;     f32 at byte o + m*ldo + 4n = Σ_blocks b (Σ_lanes l dot_l(m, n, b)) · qs[m, b] · 2^(e(n, b) - 128)
;;
;; Row n's weights are stored as in ./mxfp4-rows.wat (K/2 bytes of E2M1 codes at blocks + n*K/2,
;; low nibble first, and K/32 E8M0 exponents at scales + n*K/32). The input, quantized by
;; ./mxfp4-int8.ts, holds for each row m and block b of 32 values 48 bytes at q + 48(m*K/32 + b):
;; the 16 int8 values of even k, the 16 of odd k, and an i32x4 correction; its f32 scale is at
;; qs + 4(m*K/32 + b). halfScales is the table of 2^(e - 128) that ./mxfp4-rows.wat uses.
;;
;; Each E2M1 code becomes twice its value plus 12, an integer in [0, 24] (7 bits, as
;; i32x4.relaxed_dot_i8x16_i7x16_add_s needs for its second operand to be exact everywhere): low
;; nibbles meet the even inputs, high nibbles the odd ones. Lane l of a block's dot sums the eight
;; products of bytes 4l to 4l + 3 of both, and the correction (-12 times the same eight inputs)
;; takes the 12s back out, so every lane is an exact integer (|lane| < 2^14). Each lane is made f32
;; (exactly), times the block's two scales, and added to a per-lane f32 sum in ascending blocks;
;; the lanes are added as (l0 + l1) + (l2 + l3). Not the f32 path's bits: ./mxfp4-int8.ts states
;; the error. K is a multiple of 32.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "mxfp4_int8")
    (param $K i32) (param $M i32) (param $q i32) (param $qs i32) (param $blocks i32) (param $scales i32)
    (param $halfScales i32) (param $o i32) (param $N i32) (param $ldo i32)
    (local $n i32) (local $m i32) (local $blk i32) (local $nBlocks i32) (local $xp i32) (local $sp i32)
    (local $packed v128) (local $wlo v128) (local $whi v128) (local $xe v128) (local $xo v128)
    (local $corr v128) (local $d v128) (local $acc v128)
    (local.set $nBlocks (i32.shr_u (local.get $K) (i32.const 5)))
    (if (i32.or (i32.or (i32.eqz (local.get $N)) (i32.eqz (local.get $M))) (i32.eqz (local.get $nBlocks)))
      (then (return)))
    (loop $rows
      (local.set $m (i32.const 0))
      (loop $inputs
        (local.set $acc (v128.const i64x2 0 0))
        (local.set $xp (i32.add (local.get $q) (i32.mul (i32.mul (local.get $m) (local.get $nBlocks)) (i32.const 48))))
        (local.set $sp (i32.add (local.get $qs) (i32.shl (i32.mul (local.get $m) (local.get $nBlocks)) (i32.const 2))))
        (local.set $blk (i32.const 0))
        (loop $blocks32
          (local.set $packed (v128.load (i32.add (local.get $blocks) (i32.shl (local.get $blk) (i32.const 4)))))
          (local.set $wlo (i8x16.swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
          (local.set $whi (i8x16.swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (i8x16.shr_u (local.get $packed) (i32.const 4))))
          (local.set $xe (v128.load offset=0 (local.get $xp)))
          (local.set $xo (v128.load offset=16 (local.get $xp)))
          (local.set $corr (v128.load offset=32 (local.get $xp)))
          (local.set $d (i32x4.relaxed_dot_i8x16_i7x16_add_s (local.get $xe) (local.get $wlo) (local.get $corr)))
          (local.set $d (i32x4.relaxed_dot_i8x16_i7x16_add_s (local.get $xo) (local.get $whi) (local.get $d)))
          (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.convert_i32x4_s (local.get $d))
            (f32x4.splat (f32.mul
              (f32.load (i32.add (local.get $sp) (i32.shl (local.get $blk) (i32.const 2))))
              (f32.load (i32.add (local.get $halfScales)
                (i32.shl (i32.load8_u (i32.add (local.get $scales) (local.get $blk))) (i32.const 2)))))))))
          (local.set $xp (i32.add (local.get $xp) (i32.const 48)))
          (br_if $blocks32 (i32.lt_u
            (local.tee $blk (i32.add (local.get $blk) (i32.const 1)))
            (local.get $nBlocks))))
        (f32.store
          (i32.add (i32.add (local.get $o) (i32.mul (local.get $m) (local.get $ldo))) (i32.shl (local.get $n) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
            (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
        (br_if $inputs (i32.lt_u
          (local.tee $m (i32.add (local.get $m) (i32.const 1)))
          (local.get $M))))
      (local.set $blocks (i32.add (local.get $blocks) (i32.shr_u (local.get $K) (i32.const 1))))
      (local.set $scales (i32.add (local.get $scales) (local.get $nBlocks)))
      (br_if $rows (i32.lt_u
        (local.tee $n (i32.add (local.get $n) (i32.const 1)))
        (local.get $N))))))
