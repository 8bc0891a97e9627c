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
;; i16x8.relaxed_dot_i8x16_i7x16_s needs for its second operand to be exact everywhere): low
;; nibbles meet the even inputs, high nibbles the odd ones. Each dot's i16 lane j adds the products
;; of bytes 2j and 2j + 1 (|sum| <= 2·127·24 = 6096, no saturation), the two dots' lanes are added
;; (<= 12192, still i16), pairs of those widened and added to i32 lanes, so lane l holds the eight
;; products of bytes 4l to 4l + 3 of both, and the correction (-12 times the same eight inputs)
;; takes the 12s back out: every lane is an exact integer (|lane| < 2^14). (Not
;; i32x4.relaxed_dot_i8x16_i7x16_add_s: V8 11.3 computed it wrong in this kernel, four rows to a
;; block, while it was right in a one-row kernel; these are the instructions it emits for it.) Each lane is made f32
;; (exactly), times the block's two scales, and added to a per-lane f32 sum in ascending blocks;
;; the lanes are added as (l0 + l1) + (l2 + l3). Not the f32 path's bits: ./mxfp4-int8.ts states
;; the error. K is a multiple of 32.
;;
;; The swizzles are relaxed (every index is a nibble, below 16, where relaxed and plain agree: one
;; byte shuffle, where plain costs V8 a saturating add before it); the .plain-dot build has plain
;; ones. Rows are taken four at a time, each input block loaded once for the four: four independent
;; sums in flight instead of one. Past the last row a group repeats the last row, whose output it
;; writes again with the same bits (so no tail loop).
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "mxfp4_int8")
    (param $K i32) (param $M i32) (param $q i32) (param $qs i32) (param $blocks i32) (param $scales i32)
    (param $halfScales i32) (param $o i32) (param $N i32) (param $ldo i32)
    (local $n i32) (local $m i32) (local $blk i32) (local $nBlocks i32) (local $xp i32) (local $sp i32)
    (local $op i32) (local $last i32) (local $qscale f32) (local $ahead i32) (local $near i32) (local $step i32)
    (local $r0 i32) (local $r1 i32) (local $r2 i32) (local $r3 i32)
    (local $b0 i32) (local $b1 i32) (local $b2 i32) (local $b3 i32)
    (local $s0 i32) (local $s1 i32) (local $s2 i32) (local $s3 i32)
    (local $packed v128) (local $wlo v128) (local $whi v128) (local $xe v128) (local $xo v128)
    (local $corr v128) (local $d v128)
    (local $acc0 v128) (local $acc1 v128) (local $acc2 v128) (local $acc3 v128)
    (local.set $nBlocks (i32.shr_u (local.get $K) (i32.const 5)))
    (if (i32.or (i32.or (i32.eqz (local.get $N)) (i32.eqz (local.get $M))) (i32.eqz (local.get $nBlocks)))
      (then (return)))
    (local.set $last (i32.sub (local.get $N) (i32.const 1)))
    (loop $rows
      ;; Rows n to n + 3, each at most the last: r is its index, b and s its codes and exponents.
      (local.set $r0 (local.get $n))
      (local.set $r1 (select (i32.add (local.get $n) (i32.const 1)) (local.get $last)
        (i32.lt_u (i32.add (local.get $n) (i32.const 1)) (local.get $N))))
      (local.set $r2 (select (i32.add (local.get $n) (i32.const 2)) (local.get $last)
        (i32.lt_u (i32.add (local.get $n) (i32.const 2)) (local.get $N))))
      (local.set $r3 (select (i32.add (local.get $n) (i32.const 3)) (local.get $last)
        (i32.lt_u (i32.add (local.get $n) (i32.const 3)) (local.get $N))))
      (local.set $b0 (i32.add (local.get $blocks) (i32.mul (local.get $r0) (i32.shr_u (local.get $K) (i32.const 1)))))
      (local.set $s0 (i32.add (local.get $scales) (i32.mul (local.get $r0) (local.get $nBlocks))))
      (local.set $b1 (i32.add (local.get $blocks) (i32.mul (local.get $r1) (i32.shr_u (local.get $K) (i32.const 1)))))
      (local.set $s1 (i32.add (local.get $scales) (i32.mul (local.get $r1) (local.get $nBlocks))))
      (local.set $b2 (i32.add (local.get $blocks) (i32.mul (local.get $r2) (i32.shr_u (local.get $K) (i32.const 1)))))
      (local.set $s2 (i32.add (local.get $scales) (i32.mul (local.get $r2) (local.get $nBlocks))))
      (local.set $b3 (i32.add (local.get $blocks) (i32.mul (local.get $r3) (i32.shr_u (local.get $K) (i32.const 1)))))
      (local.set $s3 (i32.add (local.get $scales) (i32.mul (local.get $r3) (local.get $nBlocks))))
      ;; The next group's codes, a cache line a block (the four rows' 64 bytes), read ahead so they
      ;; are on their way: short rows from memory are four short streams a prefetcher barely sees.
      ;; Only where the next group is near (K <= 8192) and four whole rows of this call (so no read
      ;; past the weight); else row n's own block, 16 bytes a block, which it reads anyway.
      (local.set $near (i32.and (i32.le_u (i32.add (local.get $n) (i32.const 8)) (local.get $N))
        (i32.le_u (local.get $K) (i32.const 8192))))
      (local.set $ahead (select (i32.add (local.get $b3) (i32.shr_u (local.get $K) (i32.const 1))) (local.get $b0)
        (local.get $near)))
      (local.set $step (select (i32.const 6) (i32.const 4) (local.get $near)))
      (local.set $m (i32.const 0))
      (loop $inputs
        (local.set $acc0 (v128.const i64x2 0 0))
        (local.set $acc1 (v128.const i64x2 0 0))
        (local.set $acc2 (v128.const i64x2 0 0))
        (local.set $acc3 (v128.const i64x2 0 0))
        (local.set $xp (i32.add (local.get $q) (i32.mul (i32.mul (local.get $m) (local.get $nBlocks)) (i32.const 48))))
        (local.set $sp (i32.add (local.get $qs) (i32.shl (i32.mul (local.get $m) (local.get $nBlocks)) (i32.const 2))))
        (local.set $blk (i32.const 0))
        (loop $blocks32
          (local.set $xe (v128.load offset=0 (local.get $xp)))
          (local.set $xo (v128.load offset=16 (local.get $xp)))
          (local.set $corr (v128.load offset=32 (local.get $xp)))
          (local.set $qscale (f32.load (i32.add (local.get $sp) (i32.shl (local.get $blk) (i32.const 2)))))
          (drop (i32.load8_u (i32.add (local.get $ahead) (i32.shl (local.get $blk) (local.get $step)))))
          (local.set $packed (v128.load (i32.add (local.get $b0) (i32.shl (local.get $blk) (i32.const 4)))))
          (local.set $wlo (i8x16.relaxed_swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
          (local.set $whi (i8x16.relaxed_swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (i8x16.shr_u (local.get $packed) (i32.const 4))))
          (local.set $wlo (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xe) (local.get $wlo)))
          (local.set $whi (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xo) (local.get $whi)))
          (local.set $d (i32x4.add (local.get $corr)
            (i32x4.extadd_pairwise_i16x8_s (i16x8.add (local.get $wlo) (local.get $whi)))))
          (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (f32x4.convert_i32x4_s (local.get $d))
            (f32x4.splat (f32.mul (local.get $qscale)
              (f32.load (i32.add (local.get $halfScales)
                (i32.shl (i32.load8_u (i32.add (local.get $s0) (local.get $blk))) (i32.const 2)))))))))
          (local.set $packed (v128.load (i32.add (local.get $b1) (i32.shl (local.get $blk) (i32.const 4)))))
          (local.set $wlo (i8x16.relaxed_swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
          (local.set $whi (i8x16.relaxed_swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (i8x16.shr_u (local.get $packed) (i32.const 4))))
          (local.set $wlo (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xe) (local.get $wlo)))
          (local.set $whi (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xo) (local.get $whi)))
          (local.set $d (i32x4.add (local.get $corr)
            (i32x4.extadd_pairwise_i16x8_s (i16x8.add (local.get $wlo) (local.get $whi)))))
          (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (f32x4.convert_i32x4_s (local.get $d))
            (f32x4.splat (f32.mul (local.get $qscale)
              (f32.load (i32.add (local.get $halfScales)
                (i32.shl (i32.load8_u (i32.add (local.get $s1) (local.get $blk))) (i32.const 2)))))))))
          (local.set $packed (v128.load (i32.add (local.get $b2) (i32.shl (local.get $blk) (i32.const 4)))))
          (local.set $wlo (i8x16.relaxed_swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
          (local.set $whi (i8x16.relaxed_swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (i8x16.shr_u (local.get $packed) (i32.const 4))))
          (local.set $wlo (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xe) (local.get $wlo)))
          (local.set $whi (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xo) (local.get $whi)))
          (local.set $d (i32x4.add (local.get $corr)
            (i32x4.extadd_pairwise_i16x8_s (i16x8.add (local.get $wlo) (local.get $whi)))))
          (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (f32x4.convert_i32x4_s (local.get $d))
            (f32x4.splat (f32.mul (local.get $qscale)
              (f32.load (i32.add (local.get $halfScales)
                (i32.shl (i32.load8_u (i32.add (local.get $s2) (local.get $blk))) (i32.const 2)))))))))
          (local.set $packed (v128.load (i32.add (local.get $b3) (i32.shl (local.get $blk) (i32.const 4)))))
          (local.set $wlo (i8x16.relaxed_swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
          (local.set $whi (i8x16.relaxed_swizzle
            (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0)
            (i8x16.shr_u (local.get $packed) (i32.const 4))))
          (local.set $wlo (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xe) (local.get $wlo)))
          (local.set $whi (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xo) (local.get $whi)))
          (local.set $d (i32x4.add (local.get $corr)
            (i32x4.extadd_pairwise_i16x8_s (i16x8.add (local.get $wlo) (local.get $whi)))))
          (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (f32x4.convert_i32x4_s (local.get $d))
            (f32x4.splat (f32.mul (local.get $qscale)
              (f32.load (i32.add (local.get $halfScales)
                (i32.shl (i32.load8_u (i32.add (local.get $s3) (local.get $blk))) (i32.const 2)))))))))
          (local.set $xp (i32.add (local.get $xp) (i32.const 48)))
          (br_if $blocks32 (i32.lt_u
            (local.tee $blk (i32.add (local.get $blk) (i32.const 1)))
            (local.get $nBlocks))))
        (local.set $op (i32.add (local.get $o) (i32.mul (local.get $m) (local.get $ldo))))
        (f32.store 
          (i32.add (local.get $op) (i32.shl (local.get $r0) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $acc0)) (f32x4.extract_lane 1 (local.get $acc0)))
            (f32.add (f32x4.extract_lane 2 (local.get $acc0)) (f32x4.extract_lane 3 (local.get $acc0)))))
        (f32.store 
          (i32.add (local.get $op) (i32.shl (local.get $r1) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $acc1)) (f32x4.extract_lane 1 (local.get $acc1)))
            (f32.add (f32x4.extract_lane 2 (local.get $acc1)) (f32x4.extract_lane 3 (local.get $acc1)))))
        (f32.store 
          (i32.add (local.get $op) (i32.shl (local.get $r2) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $acc2)) (f32x4.extract_lane 1 (local.get $acc2)))
            (f32.add (f32x4.extract_lane 2 (local.get $acc2)) (f32x4.extract_lane 3 (local.get $acc2)))))
        (f32.store 
          (i32.add (local.get $op) (i32.shl (local.get $r3) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $acc3)) (f32x4.extract_lane 1 (local.get $acc3)))
            (f32.add (f32x4.extract_lane 2 (local.get $acc3)) (f32x4.extract_lane 3 (local.get $acc3)))))
        (br_if $inputs (i32.lt_u
          (local.tee $m (i32.add (local.get $m) (i32.const 1)))
          (local.get $M))))
      (br_if $rows (i32.lt_u
        (local.tee $n (i32.add (local.get $n) (i32.const 4)))
        (local.get $N))))))
