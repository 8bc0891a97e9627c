;; MXFP4 rows dotted with the input, dequantized inside the loop (the fused MXFP4 matmul):
;;
;;   mxfp4(K, M, x, blocks, scales, halfScales, acc, o, N, ldo): for n < N, m < M:
;;     f32 at byte o + m*ldo + 4n = Σ_k x[m*K + k] · w_n[k]
;;
;; where row n's K values are stored as K/2 bytes at blocks + n*K/2 (two E2M1 codes a byte, low
;; nibble first) and K/32 E8M0 exponents at scales + n*K/32, one per 32 consecutive values, and
;; w_n[k] = E2M1(code) · 2^(exponent - 127). halfScales is a table of 256 f32, 2^(e - 128) (NaN at
;; 255), and acc 16·M bytes of scratch. Each E2M1 value is taken as twice itself, an integer
;; (0, 1, 2, 3, 4, 6, 8, 12 and negatives), times half the scale: the product is exact, so every
;; weight is the value ../matmul-kernel.ts's table decoding gives. Each output keeps four f32 lane
;; sums over k mod 4, in ascending k, added as (l0 + l1) + (l2 + l3), each step a relaxed_madd
;; (unfused in the .unfused build): the operations of ./matmul-tile.wat on the decoded rows, so the
;; result equals that tile's on the unpacked weight bit for bit. K is a multiple of 32.
;;
;; ../matmul-kernel.ts instead decodes a chunk of rows with ./mxfp4-decode.wat (the same values)
;; and runs ./matmul-tile.wat over them from KernelSwitches.mxfp4ScratchTokens input rows on (by
;; default from one: measured as fast or faster at 1 to 512, bench/mxfp4-prefill.ts): the tile keeps
;; four rows' sums as independent chains in registers, where mxfp4's one row is one chain of
;; dependent multiply-adds through memory.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "mxfp4")
    (param $K i32) (param $M i32) (param $x i32) (param $blocks i32) (param $scales i32)
    (param $halfScales i32) (param $acc i32) (param $o i32) (param $N i32) (param $ldo i32)
    (local $n i32) (local $blk i32) (local $nBlocks i32) (local $m i32) (local $xp i32) (local $ap i32)
    (local $rowBytes i32)
    (local $packed v128) (local $lo v128) (local $hi v128) (local $first v128) (local $second v128)
    (local $scale v128) (local $xv v128) (local $a v128)
    (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128)
    (local $w4 v128) (local $w5 v128) (local $w6 v128) (local $w7 v128)
    (local.set $nBlocks (i32.shr_u (local.get $K) (i32.const 5)))
    (local.set $rowBytes (i32.shl (local.get $K) (i32.const 2)))
    (if (i32.or (i32.or (i32.eqz (local.get $N)) (i32.eqz (local.get $M))) (i32.eqz (local.get $nBlocks)))
      (then (return)))
    (loop $rows
      (local.set $m (i32.const 0))
      (block $zeroed
        (loop $zero
          (br_if $zeroed (i32.ge_u (local.get $m) (local.get $M)))
          (v128.store (i32.add (local.get $acc) (i32.shl (local.get $m) (i32.const 4))) (v128.const i64x2 0 0))
          (local.set $m (i32.add (local.get $m) (i32.const 1)))
          (br $zero)))
      (local.set $blk (i32.const 0))
      (loop $blocks32
        ;; 32 weights: 16 bytes of codes and their scale.
        (local.set $packed (v128.load (i32.add (local.get $blocks) (i32.shl (local.get $blk) (i32.const 4)))))
        (local.set $scale (f32x4.splat (f32.load (i32.add (local.get $halfScales)
          (i32.shl (i32.load8_u (i32.add (local.get $scales) (local.get $blk))) (i32.const 2))))))
        (local.set $lo (i8x16.swizzle
          (v128.const i8x16 0 1 2 3 4 6 8 12 0 -1 -2 -3 -4 -6 -8 -12)
          (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
        (local.set $hi (i8x16.swizzle
          (v128.const i8x16 0 1 2 3 4 6 8 12 0 -1 -2 -3 -4 -6 -8 -12)
          (i8x16.shr_u (local.get $packed) (i32.const 4))))
        ;; Low nibble first: values 0-15 and 16-31 in order.
        (local.set $first (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
        (local.set $second (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
        (local.set $w0 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (i16x8.extend_low_i8x16_s (local.get $first)))) (local.get $scale)))
        (local.set $w1 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (i16x8.extend_low_i8x16_s (local.get $first)))) (local.get $scale)))
        (local.set $w2 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (i16x8.extend_high_i8x16_s (local.get $first)))) (local.get $scale)))
        (local.set $w3 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (i16x8.extend_high_i8x16_s (local.get $first)))) (local.get $scale)))
        (local.set $w4 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (i16x8.extend_low_i8x16_s (local.get $second)))) (local.get $scale)))
        (local.set $w5 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (i16x8.extend_low_i8x16_s (local.get $second)))) (local.get $scale)))
        (local.set $w6 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (i16x8.extend_high_i8x16_s (local.get $second)))) (local.get $scale)))
        (local.set $w7 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (i16x8.extend_high_i8x16_s (local.get $second)))) (local.get $scale)))
        ;; Every input row takes the 32 weights into its accumulator.
        (local.set $m (i32.const 0))
        (local.set $xp (i32.add (local.get $x) (i32.shl (local.get $blk) (i32.const 7))))
        (loop $inputs
          (local.set $ap (i32.add (local.get $acc) (i32.shl (local.get $m) (i32.const 4))))
          (local.set $a (v128.load (local.get $ap)))
          (local.set $xv (v128.load offset=0 (local.get $xp)))
          (local.set $a (f32x4.relaxed_madd (local.get $xv) (local.get $w0) (local.get $a)))
          (local.set $xv (v128.load offset=16 (local.get $xp)))
          (local.set $a (f32x4.relaxed_madd (local.get $xv) (local.get $w1) (local.get $a)))
          (local.set $xv (v128.load offset=32 (local.get $xp)))
          (local.set $a (f32x4.relaxed_madd (local.get $xv) (local.get $w2) (local.get $a)))
          (local.set $xv (v128.load offset=48 (local.get $xp)))
          (local.set $a (f32x4.relaxed_madd (local.get $xv) (local.get $w3) (local.get $a)))
          (local.set $xv (v128.load offset=64 (local.get $xp)))
          (local.set $a (f32x4.relaxed_madd (local.get $xv) (local.get $w4) (local.get $a)))
          (local.set $xv (v128.load offset=80 (local.get $xp)))
          (local.set $a (f32x4.relaxed_madd (local.get $xv) (local.get $w5) (local.get $a)))
          (local.set $xv (v128.load offset=96 (local.get $xp)))
          (local.set $a (f32x4.relaxed_madd (local.get $xv) (local.get $w6) (local.get $a)))
          (local.set $xv (v128.load offset=112 (local.get $xp)))
          (local.set $a (f32x4.relaxed_madd (local.get $xv) (local.get $w7) (local.get $a)))
          (v128.store (local.get $ap) (local.get $a))
          (local.set $xp (i32.add (local.get $xp) (local.get $rowBytes)))
          (br_if $inputs (i32.lt_u
            (local.tee $m (i32.add (local.get $m) (i32.const 1)))
            (local.get $M))))
        (br_if $blocks32 (i32.lt_u
          (local.tee $blk (i32.add (local.get $blk) (i32.const 1)))
          (local.get $nBlocks))))
      ;; (l0 + l1) + (l2 + l3) of each input row's accumulator, into column n.
      (local.set $m (i32.const 0))
      (loop $store
        (local.set $a (v128.load (i32.add (local.get $acc) (i32.shl (local.get $m) (i32.const 4)))))
        (f32.store
          (i32.add (i32.add (local.get $o) (i32.mul (local.get $m) (local.get $ldo))) (i32.shl (local.get $n) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a)) (f32x4.extract_lane 1 (local.get $a)))
            (f32.add (f32x4.extract_lane 2 (local.get $a)) (f32x4.extract_lane 3 (local.get $a)))))
        (br_if $store (i32.lt_u
          (local.tee $m (i32.add (local.get $m) (i32.const 1)))
          (local.get $M))))
      (local.set $blocks (i32.add (local.get $blocks) (i32.shr_u (local.get $K) (i32.const 1))))
      (local.set $scales (i32.add (local.get $scales) (local.get $nBlocks)))
      (br_if $rows (i32.lt_u
        (local.tee $n (i32.add (local.get $n) (i32.const 1)))
        (local.get $N))))))
