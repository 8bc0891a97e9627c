;; MXFP4 rows decoded to f32 (the fused MXFP4 matmul's scratch form; ./mxfp4-rows.wat has the
;; form that decodes inside its loop):
;;
;;   decode(blocks, scales, tables, out, count): count blocks of 32 weights (16 bytes of codes at
;;   blocks, two E2M1 codes a byte, low nibble first; one E8M0 exponent a block at scales) to f32 at
;;   out, each exactly E2M1(code) · 2^(exponent - 127) as ./mxfp4-rows.wat multiplies it out (-0 as
;;   +0, NaN at exponent 255), looked up rather than multiplied: tables is ../matmul-kernel.ts's
;;   mxfp4Tables, whose bytes at 1024 + 32e hold bytes 2 and 3 of the 16 codes' values at exponent
;;   e (bytes 0 and 1 are zero). Per block: the exponent picks two 16-byte tables, a swizzle of each
;;   by the codes gives every value's two upper bytes, and an interleave makes them words. The codes
;;   are first put in the order 0 4 1 5 2 6 3 7, 8 12 9 13 10 14 11 15 (and from 16 on likewise),
;;   so that a 32-bit lane of words holds values j and j + 4: its low word shifted up 16 and its
;;   high word masked are two f32s, two zero bytes below, with no shuffle to widen them. No
;;   multiply, no conversion, no branch (bench/kernel-before-after.ts measures the forms).
;;
;; A layout for this decode (for an offline re-layout of the codes; measured: the decode without
;; the three shuffles that make the order, on unpermuted codes, ran 1.17x [0.99, 1.39] alone and
;; 1.07x [1.04, 1.11] followed by the tile at M = 1, load 16): byte i of a block's 16 holding the
;; code of value v(i) in its low nibble and of value v(i) + 16 in its high one, where
;; v = 0 4 1 5 2 6 3 7 8 12 9 13 10 14 11 15. Then the low nibbles are `first` and the high ones
;; `second` below, as they are.
;;
;; The swizzles are relaxed (every index is a code below 16, or a constant one, where relaxed and
;; plain agree); the build also writes a .plain-swizzle variant for runtimes without relaxed SIMD.
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
      ;; Bytes 0 2 1 3 of each four, then low and high nibbles interleaved by twos: the codes of
      ;; values 0 4 1 5 2 6 3 7, 8 12 9 13 ..., and likewise from 16 on.
      (local.set $packed (i8x16.relaxed_swizzle (v128.load (local.get $blocks))
        (v128.const i8x16 0 2 1 3 4 6 5 7 8 10 9 11 12 14 13 15)))
      (local.set $lo (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
      (local.set $hi (i8x16.shr_u (local.get $packed) (i32.const 4)))
      (local.set $first (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)))
      (local.set $second (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)))
      ;; Each value's two upper bytes side by side (a word each, in the order above); a 32-bit
      ;; lane's low word shifted up is one of four values in order, its high word masked one of
      ;; the next four, with two zero bytes below: its f32 bits.
      (local.set $lo (i8x16.relaxed_swizzle (local.get $b2) (local.get $first)))
      (local.set $hi (i8x16.relaxed_swizzle (local.get $b3) (local.get $first)))
      (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
      (v128.store offset=0 (local.get $out) (i32x4.shl (local.get $p) (i32.const 16)))
      (v128.store offset=16 (local.get $out) (v128.and (local.get $p) (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000)))
      (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
      (v128.store offset=32 (local.get $out) (i32x4.shl (local.get $p) (i32.const 16)))
      (v128.store offset=48 (local.get $out) (v128.and (local.get $p) (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000)))
      (local.set $lo (i8x16.relaxed_swizzle (local.get $b2) (local.get $second)))
      (local.set $hi (i8x16.relaxed_swizzle (local.get $b3) (local.get $second)))
      (local.set $p (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
      (v128.store offset=64 (local.get $out) (i32x4.shl (local.get $p) (i32.const 16)))
      (v128.store offset=80 (local.get $out) (v128.and (local.get $p) (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000)))
      (local.set $p (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
      (v128.store offset=96 (local.get $out) (i32x4.shl (local.get $p) (i32.const 16)))
      (v128.store offset=112 (local.get $out) (v128.and (local.get $p) (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000)))
      (local.set $blocks (i32.add (local.get $blocks) (i32.const 16)))
      (local.set $out (i32.add (local.get $out) (i32.const 128)))
      (br_if $blocks32 (i32.lt_u
        (local.tee $scales (i32.add (local.get $scales) (i32.const 1)))
        (local.get $end))))))
