;; MXFP4 and scaled FP8 E4M3 to float32 (../decode-simd.ts loads it; the scalar decoders in
;; ../minifloat.ts and ../e8m0.ts give the values it must equal bit for bit).
;;
;; Each element is a product of two float32 (an element and its block's scale) that float64 holds
;; exactly, so the scalar path's one rounding to float32 is the one f32x4.mul makes. An E2M1 or
;; E4M3 value has only the top 16 bits of its float32 set: the kernels build those 16 bits, widen
;; them under 16 zero bits and multiply by the scale. Lookups use i8x16.relaxed_swizzle, whose
;; indices here are either nibbles (under 16, where it agrees with i8x16.swizzle) or lanes whose
;; result is discarded; the build also writes a .plain-swizzle binary with i8x16.swizzle.
;; The memory is not shared: it is one thread's scratch, and copies between an unshared memory and
;; ordinary arrays are memcpys, while a shared one's go element by element. The per-block steps are
;; written out in full rather than called: Node 20's V8 does not inline wasm calls, and calls made
;; these loops 1.6-1.9x slower.
(module
  (import "env" "memory" (memory 1 65536))

  ;; mxfp4(blocks, scales, out, n, factors): n blocks of 16 bytes (32 E2M1 codes, low nibble first)
  ;; to 32 float32 each at out, times the block's scale: its E8M0 code at scales + i looked up as a
  ;; float32 in the 256-entry table at `factors`. A code's float32 is built from two lookups: its top
  ;; byte and the byte under it (of 0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6; the lower 16 bits are zero).
  (func (export "mxfp4")
    (param $blocks i32) (param $scales i32) (param $out i32) (param $n i32) (param $factors i32)
    (local $i i32)
    (local $nibbles v128) (local $topBytes v128) (local $nextBytes v128) (local $zero v128)
    (local $factor v128) (local $v v128) (local $lo v128) (local $hi v128) (local $codes v128)
    (local $top v128) (local $next v128) (local $pair v128)
    (local.set $nibbles (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
    (local.set $topBytes
      (v128.const i8x16 0x00 0x3f 0x3f 0x3f 0x40 0x40 0x40 0x40 0x80 0xbf 0xbf 0xbf 0xc0 0xc0 0xc0 0xc0))
    (local.set $nextBytes
      (v128.const i8x16 0x00 0x00 0x80 0xc0 0x00 0x40 0x80 0xc0 0x00 0x00 0x80 0xc0 0x00 0x40 0x80 0xc0))
    (local.set $zero (v128.const i64x2 0 0))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $factor (f32x4.splat (f32.load (i32.add (local.get $factors)
          (i32.shl (i32.load8_u (local.get $scales)) (i32.const 2))))))
        (local.set $v (v128.load (local.get $blocks)))
        (local.set $lo (v128.and (local.get $v) (local.get $nibbles)))
        (local.set $hi (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $nibbles)))
        ;; Element codes 0-15 (low and high nibbles interleaved), their two bytes, and the 16-bit
        ;; halves, eight at a time, widened under zeros and scaled.
        (local.set $codes (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
        (local.set $top (i8x16.relaxed_swizzle (local.get $topBytes) (local.get $codes)))
        (local.set $next (i8x16.relaxed_swizzle (local.get $nextBytes) (local.get $codes)))
        (local.set $pair (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $next) (local.get $top)))
        (v128.store offset=0 (local.get $out) (f32x4.mul
          (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $zero) (local.get $pair))
          (local.get $factor)))
        (v128.store offset=16 (local.get $out) (f32x4.mul
          (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $zero) (local.get $pair))
          (local.get $factor)))
        (local.set $pair (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $next) (local.get $top)))
        (v128.store offset=32 (local.get $out) (f32x4.mul
          (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $zero) (local.get $pair))
          (local.get $factor)))
        (v128.store offset=48 (local.get $out) (f32x4.mul
          (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $zero) (local.get $pair))
          (local.get $factor)))
        ;; Element codes 16-31 alike.
        (local.set $codes (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))
        (local.set $top (i8x16.relaxed_swizzle (local.get $topBytes) (local.get $codes)))
        (local.set $next (i8x16.relaxed_swizzle (local.get $nextBytes) (local.get $codes)))
        (local.set $pair (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $next) (local.get $top)))
        (v128.store offset=64 (local.get $out) (f32x4.mul
          (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $zero) (local.get $pair))
          (local.get $factor)))
        (v128.store offset=80 (local.get $out) (f32x4.mul
          (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $zero) (local.get $pair))
          (local.get $factor)))
        (local.set $pair (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $next) (local.get $top)))
        (v128.store offset=96 (local.get $out) (f32x4.mul
          (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $zero) (local.get $pair))
          (local.get $factor)))
        (v128.store offset=112 (local.get $out) (f32x4.mul
          (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $zero) (local.get $pair))
          (local.get $factor)))
        (local.set $blocks (i32.add (local.get $blocks) (i32.const 16)))
        (local.set $scales (i32.add (local.get $scales) (i32.const 1)))
        (local.set $out (i32.add (local.get $out) (i32.const 128)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $block))))

  ;; fp8(codes, out, count, blockCols, scales): count E4M3 codes to float32 at out, the k-th run of
  ;; blockCols times the float32 at scales + 4k. count and blockCols are multiples of 16. Eight codes
  ;; a vector, as 16-bit lanes that become the top halves of their float32:
  ;;  - a normal magnitude's 7 bits shifted under a float32's sign, plus the exponent bias
  ;;    difference (127 - 7) in the exponent field;
  ;;  - a subnormal magnitude m (0-7) from a table of the top halves of m·2^-9, indexed by the byte
  ;;    pair 2m, 2m + 1 (m·0x202 + 0x100), which keeps float32 subnormals out of every operand (x86
  ;;    takes a slow microcode path on those);
  ;;  - then the sign, and NaN for 0x7f and 0xff.
  (func (export "fp8")
    (param $codes i32) (param $out i32) (param $count i32) (param $blockCols i32) (param $scales i32)
    (local $c i32) (local $runEnd i32)
    (local $factor v128) (local $x v128) (local $wide v128) (local $magnitude v128) (local $tops v128)
    (local $zero v128) (local $subnormals v128)
    (local.set $zero (v128.const i64x2 0 0))
    (local.set $subnormals (v128.const i16x8 0x0000 0x3b00 0x3b80 0x3bc0 0x3c00 0x3c20 0x3c40 0x3c60))
    (block $done
      (loop $run
        (br_if $done (i32.ge_u (local.get $c) (local.get $count)))
        (local.set $factor (f32x4.splat (f32.load (local.get $scales))))
        (local.set $scales (i32.add (local.get $scales) (i32.const 4)))
        ;; runEnd = min(c + blockCols, count)
        (local.set $runEnd (select
          (i32.add (local.get $c) (local.get $blockCols))
          (local.get $count)
          (i32.lt_u (i32.add (local.get $c) (local.get $blockCols)) (local.get $count))))
        (block $runDone
          (loop $sixteen
            (br_if $runDone (i32.ge_u (local.get $c) (local.get $runEnd)))
            (local.set $x (v128.load (local.get $codes)))
            (local.set $wide (i16x8.extend_low_i8x16_u (local.get $x)))
            (local.set $magnitude (v128.and (local.get $wide) (i16x8.splat (i32.const 0x7f))))
            (local.set $tops (v128.or (v128.or
              (v128.bitselect
                (i8x16.relaxed_swizzle (local.get $subnormals)
                  (i16x8.add (i16x8.mul (local.get $magnitude) (i16x8.splat (i32.const 0x202)))
                    (i16x8.splat (i32.const 0x100))))
                (i16x8.add (i16x8.shl (local.get $magnitude) (i32.const 4)) (i16x8.splat (i32.const 0x3c00)))
                (i16x8.lt_u (local.get $magnitude) (i16x8.splat (i32.const 8))))
              (i16x8.shl (v128.and (local.get $wide) (i16x8.splat (i32.const 0x80))) (i32.const 8)))
              (v128.and (i16x8.eq (local.get $magnitude) (i16x8.splat (i32.const 0x7f)))
                (i16x8.splat (i32.const 0x7fc0)))))
            (v128.store offset=0 (local.get $out) (f32x4.mul
              (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $zero) (local.get $tops))
              (local.get $factor)))
            (v128.store offset=16 (local.get $out) (f32x4.mul
              (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $zero) (local.get $tops))
              (local.get $factor)))
            ;; Codes 8-15 alike.
            (local.set $wide (i16x8.extend_high_i8x16_u (local.get $x)))
            (local.set $magnitude (v128.and (local.get $wide) (i16x8.splat (i32.const 0x7f))))
            (local.set $tops (v128.or (v128.or
              (v128.bitselect
                (i8x16.relaxed_swizzle (local.get $subnormals)
                  (i16x8.add (i16x8.mul (local.get $magnitude) (i16x8.splat (i32.const 0x202)))
                    (i16x8.splat (i32.const 0x100))))
                (i16x8.add (i16x8.shl (local.get $magnitude) (i32.const 4)) (i16x8.splat (i32.const 0x3c00)))
                (i16x8.lt_u (local.get $magnitude) (i16x8.splat (i32.const 8))))
              (i16x8.shl (v128.and (local.get $wide) (i16x8.splat (i32.const 0x80))) (i32.const 8)))
              (v128.and (i16x8.eq (local.get $magnitude) (i16x8.splat (i32.const 0x7f)))
                (i16x8.splat (i32.const 0x7fc0)))))
            (v128.store offset=32 (local.get $out) (f32x4.mul
              (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $zero) (local.get $tops))
              (local.get $factor)))
            (v128.store offset=48 (local.get $out) (f32x4.mul
              (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $zero) (local.get $tops))
              (local.get $factor)))
            (local.set $codes (i32.add (local.get $codes) (i32.const 16)))
            (local.set $out (i32.add (local.get $out) (i32.const 64)))
            (local.set $c (i32.add (local.get $c) (i32.const 16)))
            (br $sixteen)))
        (br $run)))))
