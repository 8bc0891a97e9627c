;; MXFP4 rows decoded to f32 (the fused MXFP4 matmul's scratch form; ./mxfp4-rows.wat has the
;; form that decodes inside its loop):
;;
;;   decode(blocks, scales, tables, out, count): count blocks of 32 weights (16 bytes of codes at
;;   blocks, two E2M1 codes a byte, low nibble first; one E8M0 exponent a block at scales) to f32 at
;;   out, each exactly E2M1(code) · 2^(exponent - 127) as ./mxfp4-rows.wat multiplies it out (-0 as
;;   +0, NaN at exponent 255), looked up rather than multiplied: tables is ../matmul-kernel.ts's
;;   mxfp4Tables, whose bytes at 1024 + 32e hold bytes 2 and 3 of the 16 codes' values at exponent
;;   e (bytes 0 and 1 are zero). Per block: the exponent picks two 16-byte tables, a swizzle of each
;;   by the codes gives every value's two upper bytes, and two interleaves put them above two zero
;;   bytes. No multiply, no conversion, no branch: fewer shuffle-unit operations than widening
;;   each code to an integer lane and multiplying (bench/kernel-before-after.ts measures the two).
;;
;; The swizzles are relaxed (every index is a code, below 16, where relaxed and plain agree); the
;; build also writes a .plain-swizzle variant for runtimes without relaxed SIMD.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "decode")
    (param $blocks i32) (param $scales i32) (param $tables i32) (param $out i32) (param $count i32)
    (local $end i32) (local $at i32) (local $packed v128) (local $lo v128) (local $hi v128)
    (local $first v128) (local $second v128) (local $b2 v128) (local $b3 v128) (local $p v128)
    (if (i32.eqz (local.get $count)) (then (return)))
    (local.set $end (i32.add (local.get $scales) (local.get $count)))
    (loop $blocks32
      ;; The block's exponent picks its 16 values' bytes 2 and 3 (bytes 0 and 1 are zero).
      (local.set $at (i32.add (local.get $tables) (i32.add (i32.const 1024)
        (i32.shl (i32.load8_u (local.get $scales)) (i32.const 5)))))
      (local.set $b2 (v128.load offset=0 (local.get $at)))
      (local.set $b3 (v128.load offset=16 (local.get $at)))
      (local.set $packed (v128.load (local.get $blocks)))
      (local.set $lo (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
      (local.set $hi (i8x16.shr_u (local.get $packed) (i32.const 4)))
      ;; Low nibble first: the codes of values 0-15 and 16-31 in order.
      (local.set $first (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
      (local.set $second (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
      ;; Each value's two upper bytes side by side, then below them two zero bytes: its f32 bits.
      (local.set $lo (i8x16.relaxed_swizzle (local.get $b2) (local.get $first)))
      (local.set $hi (i8x16.relaxed_swizzle (local.get $b3) (local.get $first)))
      (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
      (v128.store offset=0 (local.get $out) (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (v128.const i64x2 0 0) (local.get $p)))
      (v128.store offset=16 (local.get $out) (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (v128.const i64x2 0 0) (local.get $p)))
      (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
      (v128.store offset=32 (local.get $out) (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (v128.const i64x2 0 0) (local.get $p)))
      (v128.store offset=48 (local.get $out) (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (v128.const i64x2 0 0) (local.get $p)))
      (local.set $lo (i8x16.relaxed_swizzle (local.get $b2) (local.get $second)))
      (local.set $hi (i8x16.relaxed_swizzle (local.get $b3) (local.get $second)))
      (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
      (v128.store offset=64 (local.get $out) (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (v128.const i64x2 0 0) (local.get $p)))
      (v128.store offset=80 (local.get $out) (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (v128.const i64x2 0 0) (local.get $p)))
      (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
      (v128.store offset=96 (local.get $out) (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (v128.const i64x2 0 0) (local.get $p)))
      (v128.store offset=112 (local.get $out) (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (v128.const i64x2 0 0) (local.get $p)))
      (local.set $blocks (i32.add (local.get $blocks) (i32.const 16)))
      (local.set $out (i32.add (local.get $out) (i32.const 128)))
      (br_if $blocks32 (i32.lt_u
        (local.tee $scales (i32.add (local.get $scales) (i32.const 1)))
        (local.get $end))))))
