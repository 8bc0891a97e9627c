;; MXFP4 rows dotted with one input row at a time, decoded straight into the multiply-adds (the
;; fused MXFP4 matmul at decode, where a chunk decoded into scratch would be stored only to be
;; loaded back by the tile):
;;
;;   mxfp4(K, M, x, blocks, scales, tables, acc, o, N, ldo): for n < N, m < M:
;;     f32 at byte o + m*ldo + 4n = Σ_k x[m*K + k] · w_n[k]
;;
;; where row n's K values are stored as K/2 bytes at blocks + n*K/2 (two E2M1 codes a byte, low
;; nibble first) and K/32 E8M0 exponents at scales + n*K/32, one per 32 consecutive values;
;; tables is ../matmul-kernel.ts's mxfp4Tables and acc 128 bytes of scratch. K is a multiple of 32.
;;
;; Each block of 32 is decoded with ./mxfp4-decode.wat's lookups (its tables picked by the
;; block's exponent, two swizzles giving each value's bytes 2 and 3, so the same values), but in
;; ascending order and each vector of four values into a multiply-add at once. The codes' low and
;; high nibbles interleaved are the codes of values 0-15 (and 16-31) in order; each value's two
;; bytes interleaved make a word; and each word interleaved with a zero word ($zero, never set)
;; is a lane: values 0-3, 4-7, ... The code bytes need no swizzle first, so a block takes one
;; instruction fewer than in ./mxfp4-decode.wat's order, whose words a shift and a mask widen
;; (1.046x [1.017, 1.076], same bits). Codes in halves order are in that order already, so the
;; `.halves` build (scripts/build-kernels.mjs) takes the nibbles as they are and widens by a
;; byte shuffle and a mask. The sums are ./matmul-tile.wat's at one input row: each output keeps four
;; f32 lane sums over k mod 4, in ascending k, each step a relaxed_madd (a mul then an add in the
;; .unfused build), added as (l0 + l1) + (l2 + l3); so every output equals the tile's on the
;; decoded rows bit for bit (matmul.test.ts holds weights where another order gives other bits).
;;
;; Four rows are in flight, as in the tile: four independent chains of multiply-adds. Each block
;; is taken in two halves of 16 values: the half's four input vectors are loaded once into
;; registers and serve all four rows (loaded once a row, as before, they were 8 of some 50
;; instructions a row and block; measured 1.26x [1.17, 1.37] on [2880, 2880] at load 5.5, same
;; bits). A row's codes are split into nibbles once a block, in the first half; the second
;; half's (`$second`) wait in acc's upper 64 bytes, as registers are short. Rows come in groups of
;; four from n = 0; a last group of fewer starts at N - 4 instead, recomputing (to the
;; same bits) rows already written; with N < 4 each row is a group of its own, computed four times
;; over. Each input row decodes the weights again, so ../matmul-kernel.ts calls this below
;; KernelSwitches.mxfp4ScratchTokens input rows (one), and from there decodes a chunk once into
;; scratch for the tile. bench/kernel-before-after.ts --kernel mxfp4-m1 measures the two.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "mxfp4")
    (param $K i32) (param $M i32) (param $x i32) (param $blocks i32) (param $scales i32)
    (param $tables i32) (param $acc i32) (param $o i32) (param $N i32) (param $ldo i32)
    (local $nBlocks i32) (local $halfRow i32) (local $rowStep i32) (local $scaleStep i32)
    (local $m i32) (local $n i32) (local $last i32) (local $end i32) (local $xp i32) (local $op i32) (local $at i32)
    (local $near i32) (local $ahead i32) (local $aheadStep i32)
    (local $c0 i32) (local $c1 i32) (local $c2 i32) (local $c3 i32)
    (local $q0 i32) (local $q1 i32) (local $q2 i32) (local $q3 i32)
    (local $packed v128) (local $lo v128) (local $hi v128) (local $first v128) (local $second v128)
    (local $b2 v128) (local $b3 v128) (local $p v128) (local $wv v128) (local $zero v128)
    (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $nBlocks (i32.shr_u (local.get $K) (i32.const 5)))
    (local.set $halfRow (i32.shr_u (local.get $K) (i32.const 1)))
    (if (i32.or (i32.or (i32.eqz (local.get $N)) (i32.eqz (local.get $M))) (i32.eqz (local.get $nBlocks)))
      (then (return)))
    (if (i32.ge_u (local.get $N) (i32.const 4))
      (then
        (local.set $rowStep (local.get $halfRow))
        (local.set $scaleStep (local.get $nBlocks))
        (local.set $last (i32.sub (local.get $N) (i32.const 4))))
      (else (local.set $last (i32.sub (local.get $N) (i32.const 1)))))
    (loop $inputs
      (local.set $n (i32.const 0))
      (loop $groups
        (local.set $a0 (v128.const i64x2 0 0))
        (local.set $a1 (v128.const i64x2 0 0))
        (local.set $a2 (v128.const i64x2 0 0))
        (local.set $a3 (v128.const i64x2 0 0))
        (local.set $xp (i32.add (local.get $x) (i32.mul (local.get $m) (i32.shl (local.get $K) (i32.const 2)))))
        (local.set $c0 (i32.add (local.get $blocks) (i32.mul (local.get $n) (local.get $halfRow))))
        (local.set $q0 (i32.add (local.get $scales) (i32.mul (local.get $n) (local.get $nBlocks))))
        (local.set $c1 (i32.add (local.get $c0) (local.get $rowStep)))
        (local.set $q1 (i32.add (local.get $q0) (local.get $scaleStep)))
        (local.set $c2 (i32.add (local.get $c1) (local.get $rowStep)))
        (local.set $q2 (i32.add (local.get $q1) (local.get $scaleStep)))
        (local.set $c3 (i32.add (local.get $c2) (local.get $rowStep)))
        (local.set $q3 (i32.add (local.get $q2) (local.get $scaleStep)))
        (local.set $end (i32.add (local.get $q0) (local.get $nBlocks)))
        ;; The next group's codes, a cache line a block (its four rows' 2K bytes over this group's
        ;; K/32 blocks), read ahead so they are on their way, as ./mxfp4-int8.wat does: four short
        ;; rows from memory are streams a prefetcher barely sees. Only where the next group is near
        ;; (K <= 8192) and four whole rows of this call; else row 0's own block, which it reads anyway.
        (local.set $near (i32.and (i32.le_u (i32.add (local.get $n) (i32.const 8)) (local.get $N))
          (i32.le_u (local.get $K) (i32.const 8192))))
        (local.set $ahead (select (i32.add (local.get $c3) (local.get $halfRow)) (local.get $c0) (local.get $near)))
        (local.set $aheadStep (select (i32.const 64) (i32.const 16) (local.get $near)))
        (loop $blocks32
          (drop (i32.load8_u (local.get $ahead)))
          (local.set $ahead (i32.add (local.get $ahead) (local.get $aheadStep)))
          ;; First half: the block's first 16 inputs in four registers, then each row's first 16
          ;; values decoded into its multiply-adds (the second 16's codes kept in acc for the
          ;; second half). Each row's sum is stored when its half is done, never read back: V8
          ;; keeps loads in program order but moves arithmetic late, so without a store between
          ;; rows all four rows' loads came first and their values spilled (without the stores:
          ;; 0.86x [0.81, 0.90]).
          (local.set $x0 (v128.load offset=0 (local.get $xp)))
          (local.set $x1 (v128.load offset=16 (local.get $xp)))
          (local.set $x2 (v128.load offset=32 (local.get $xp)))
          (local.set $x3 (v128.load offset=48 (local.get $xp)))
          ;; Row 0.
          (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
            (i32.shl (i32.load8_u (local.get $q0)) (i32.const 5)))))
          (local.set $packed (v128.load (local.get $c0)))
          (local.set $lo (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
          (local.set $hi (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4)) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
          (local.set $first (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
          (local.set $second (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
          (v128.store offset=64 (local.get $acc) (local.get $second))
          (local.set $b2 (i8x16.relaxed_swizzle (v128.load offset=0 (local.get $at)) (local.get $first)))
          (local.set $b3 (i8x16.relaxed_swizzle (v128.load offset=16 (local.get $at)) (local.get $first)))
          (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x0) (local.get $wv) (local.get $a0)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x1) (local.get $wv) (local.get $a0)))
          (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x2) (local.get $wv) (local.get $a0)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x3) (local.get $wv) (local.get $a0)))
          (v128.store offset=0 (local.get $acc) (local.get $a0))
          ;; Row 1.
          (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
            (i32.shl (i32.load8_u (local.get $q1)) (i32.const 5)))))
          (local.set $packed (v128.load (local.get $c1)))
          (local.set $lo (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
          (local.set $hi (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4)) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
          (local.set $first (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
          (local.set $second (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
          (v128.store offset=80 (local.get $acc) (local.get $second))
          (local.set $b2 (i8x16.relaxed_swizzle (v128.load offset=0 (local.get $at)) (local.get $first)))
          (local.set $b3 (i8x16.relaxed_swizzle (v128.load offset=16 (local.get $at)) (local.get $first)))
          (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x0) (local.get $wv) (local.get $a1)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x1) (local.get $wv) (local.get $a1)))
          (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x2) (local.get $wv) (local.get $a1)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x3) (local.get $wv) (local.get $a1)))
          (v128.store offset=16 (local.get $acc) (local.get $a1))
          ;; Row 2.
          (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
            (i32.shl (i32.load8_u (local.get $q2)) (i32.const 5)))))
          (local.set $packed (v128.load (local.get $c2)))
          (local.set $lo (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
          (local.set $hi (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4)) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
          (local.set $first (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
          (local.set $second (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
          (v128.store offset=96 (local.get $acc) (local.get $second))
          (local.set $b2 (i8x16.relaxed_swizzle (v128.load offset=0 (local.get $at)) (local.get $first)))
          (local.set $b3 (i8x16.relaxed_swizzle (v128.load offset=16 (local.get $at)) (local.get $first)))
          (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x0) (local.get $wv) (local.get $a2)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x1) (local.get $wv) (local.get $a2)))
          (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x2) (local.get $wv) (local.get $a2)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x3) (local.get $wv) (local.get $a2)))
          (v128.store offset=32 (local.get $acc) (local.get $a2))
          ;; Row 3.
          (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
            (i32.shl (i32.load8_u (local.get $q3)) (i32.const 5)))))
          (local.set $packed (v128.load (local.get $c3)))
          (local.set $lo (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
          (local.set $hi (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4)) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
          (local.set $first (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
          (local.set $second (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
          (v128.store offset=112 (local.get $acc) (local.get $second))
          (local.set $b2 (i8x16.relaxed_swizzle (v128.load offset=0 (local.get $at)) (local.get $first)))
          (local.set $b3 (i8x16.relaxed_swizzle (v128.load offset=16 (local.get $at)) (local.get $first)))
          (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x0) (local.get $wv) (local.get $a3)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x1) (local.get $wv) (local.get $a3)))
          (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x2) (local.get $wv) (local.get $a3)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x3) (local.get $wv) (local.get $a3)))
          (v128.store offset=48 (local.get $acc) (local.get $a3))
          ;; Second half: the next 16 inputs, each row's second 16 values (its codes from scratch).
          (local.set $x0 (v128.load offset=64 (local.get $xp)))
          (local.set $x1 (v128.load offset=80 (local.get $xp)))
          (local.set $x2 (v128.load offset=96 (local.get $xp)))
          (local.set $x3 (v128.load offset=112 (local.get $xp)))
          ;; Row 0.
          (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
            (i32.shl (i32.load8_u (local.get $q0)) (i32.const 5)))))
          (local.set $second (v128.load offset=64 (local.get $acc)))
          (local.set $b2 (i8x16.relaxed_swizzle (v128.load offset=0 (local.get $at)) (local.get $second)))
          (local.set $b3 (i8x16.relaxed_swizzle (v128.load offset=16 (local.get $at)) (local.get $second)))
          (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x0) (local.get $wv) (local.get $a0)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x1) (local.get $wv) (local.get $a0)))
          (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x2) (local.get $wv) (local.get $a0)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x3) (local.get $wv) (local.get $a0)))
          (v128.store offset=0 (local.get $acc) (local.get $a0))
          ;; Row 1.
          (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
            (i32.shl (i32.load8_u (local.get $q1)) (i32.const 5)))))
          (local.set $second (v128.load offset=80 (local.get $acc)))
          (local.set $b2 (i8x16.relaxed_swizzle (v128.load offset=0 (local.get $at)) (local.get $second)))
          (local.set $b3 (i8x16.relaxed_swizzle (v128.load offset=16 (local.get $at)) (local.get $second)))
          (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x0) (local.get $wv) (local.get $a1)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x1) (local.get $wv) (local.get $a1)))
          (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x2) (local.get $wv) (local.get $a1)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x3) (local.get $wv) (local.get $a1)))
          (v128.store offset=16 (local.get $acc) (local.get $a1))
          ;; Row 2.
          (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
            (i32.shl (i32.load8_u (local.get $q2)) (i32.const 5)))))
          (local.set $second (v128.load offset=96 (local.get $acc)))
          (local.set $b2 (i8x16.relaxed_swizzle (v128.load offset=0 (local.get $at)) (local.get $second)))
          (local.set $b3 (i8x16.relaxed_swizzle (v128.load offset=16 (local.get $at)) (local.get $second)))
          (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x0) (local.get $wv) (local.get $a2)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x1) (local.get $wv) (local.get $a2)))
          (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x2) (local.get $wv) (local.get $a2)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x3) (local.get $wv) (local.get $a2)))
          (v128.store offset=32 (local.get $acc) (local.get $a2))
          ;; Row 3.
          (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
            (i32.shl (i32.load8_u (local.get $q3)) (i32.const 5)))))
          (local.set $second (v128.load offset=112 (local.get $acc)))
          (local.set $b2 (i8x16.relaxed_swizzle (v128.load offset=0 (local.get $at)) (local.get $second)))
          (local.set $b3 (i8x16.relaxed_swizzle (v128.load offset=16 (local.get $at)) (local.get $second)))
          (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x0) (local.get $wv) (local.get $a3)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x1) (local.get $wv) (local.get $a3)))
          (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $b2) (local.get $b3)))
          (local.set $wv (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $zero) (local.get $p)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x2) (local.get $wv) (local.get $a3)))
          (local.set $wv (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $zero) (local.get $p)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x3) (local.get $wv) (local.get $a3)))
          (v128.store offset=48 (local.get $acc) (local.get $a3))

          (local.set $c0 (i32.add (local.get $c0) (i32.const 16)))
          (local.set $c1 (i32.add (local.get $c1) (i32.const 16)))
          (local.set $c2 (i32.add (local.get $c2) (i32.const 16)))
          (local.set $c3 (i32.add (local.get $c3) (i32.const 16)))
          (local.set $q1 (i32.add (local.get $q1) (i32.const 1)))
          (local.set $q2 (i32.add (local.get $q2) (i32.const 1)))
          (local.set $q3 (i32.add (local.get $q3) (i32.const 1)))
          (local.set $xp (i32.add (local.get $xp) (i32.const 128)))
          (br_if $blocks32 (i32.lt_u
            (local.tee $q0 (i32.add (local.get $q0) (i32.const 1)))
            (local.get $end))))
        (local.set $op (i32.add
          (i32.add (local.get $o) (i32.mul (local.get $m) (local.get $ldo)))
          (i32.shl (local.get $n) (i32.const 2))))
        (f32.store offset=0 (local.get $op) (f32.add
              (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
              (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
        (if (local.get $rowStep)
          (then
            (f32.store offset=4 (local.get $op) (f32.add
              (f32.add (f32x4.extract_lane 0 (local.get $a1)) (f32x4.extract_lane 1 (local.get $a1)))
              (f32.add (f32x4.extract_lane 2 (local.get $a1)) (f32x4.extract_lane 3 (local.get $a1)))))
            (f32.store offset=8 (local.get $op) (f32.add
              (f32.add (f32x4.extract_lane 0 (local.get $a2)) (f32x4.extract_lane 1 (local.get $a2)))
              (f32.add (f32x4.extract_lane 2 (local.get $a2)) (f32x4.extract_lane 3 (local.get $a2)))))
            (f32.store offset=12 (local.get $op) (f32.add
              (f32.add (f32x4.extract_lane 0 (local.get $a3)) (f32x4.extract_lane 1 (local.get $a3)))
              (f32.add (f32x4.extract_lane 2 (local.get $a3)) (f32x4.extract_lane 3 (local.get $a3)))))))
        (if (i32.lt_u (local.get $n) (local.get $last))
          (then
            (local.set $n (i32.add (local.get $n) (select (i32.const 4) (i32.const 1) (local.get $rowStep))))
            (if (i32.gt_u (local.get $n) (local.get $last)) (then (local.set $n (local.get $last))))
            (br $groups))))
      (br_if $inputs (i32.lt_u
        (local.tee $m (i32.add (local.get $m) (i32.const 1)))
        (local.get $M))))))
