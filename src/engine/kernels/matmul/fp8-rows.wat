;; FP8 E4M3FN rows with block scales decoded to f32 (the FP8 matmul's scratch form, as
;; ./mxfp4-decode.wat's for weights stored one byte a value):
;;
;;   decode(K, codes, scales, scaleRowBytes, blocksPerScale, blockRows, band0, out, N): for n < N,
;;     f32 at byte out + 4(n*K + k) = w_n[k]
;;
;; where row n's K codes are K bytes at codes + n*K and w_n[k] = E4M3(code) · scale, the scale an
;; f32 of the row's scale row (starting at `scales`, blocksPerScale blocks of 32 values each). Rows
;; share a scale row in bands of blockRows; the first row is band0 rows into its band, and the
;; scale row advances by scaleRowBytes at each new band (1x32 blocks: blockRows 1, blocksPerScale
;; 1; 128x128 tiles: 128 and 4). A code becomes f32 bits with its sign at bit 31 and its seven
;; exponent and mantissa bits at bits 20-26, which is the value times 2^-120 exactly (E4M3's
;; subnormals land on f32 subnormals); times 2^120 is the value again, exactly, then times the
;; scale is the one rounding ../matmul-kernel.ts's table decoding does. 0x7f and 0xff, E4M3FN's
;; NaN, become NaN (a mask checked once per 32 codes). ../matmul-kernel.ts decodes a chunk of rows
;; with it into scratch and runs ./matmul-tile.wat over them, so the result is that tile's on the
;; unpacked weight bit for bit. K is a multiple of 32.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "decode")
    (param $K i32) (param $codes i32) (param $scales i32) (param $scaleRowBytes i32)
    (param $blocksPerScale i32) (param $blockRows i32) (param $band0 i32) (param $out i32) (param $N i32)
    (local $n i32) (local $blk i32) (local $nBlocks i32) (local $inBand i32) (local $rowCodes i32)
    (local $first v128) (local $second v128) (local $nanFirst v128) (local $nanSecond v128)
    (local $scale v128)
    (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128)
    (local $w4 v128) (local $w5 v128) (local $w6 v128) (local $w7 v128)
    (local.set $nBlocks (i32.shr_u (local.get $K) (i32.const 5)))
    (local.set $inBand (local.get $band0))
    (if (i32.or (i32.eqz (local.get $N)) (i32.eqz (local.get $nBlocks))) (then (return)))
    (loop $rows
      (local.set $blk (i32.const 0))
      (local.set $rowCodes (local.get $codes))
      (loop $blocks32
        ;; 32 weights: 32 bytes of codes and their block's scale.
        (local.set $first (v128.load (local.get $rowCodes)))
        (local.set $second (v128.load offset=16 (local.get $rowCodes)))
        (local.set $scale (f32x4.splat (f32.load (i32.add (local.get $scales)
          (i32.shl (i32.div_u (local.get $blk) (local.get $blocksPerScale)) (i32.const 2))))))
        ;; NaN's codes (0x7f, 0xff) among the 32: a mask byte each, checked once for the block.
        (local.set $nanFirst (i8x16.eq (v128.and (local.get $first) (v128.const i8x16 127 127 127 127 127 127 127 127 127 127 127 127 127 127 127 127))
          (v128.const i8x16 127 127 127 127 127 127 127 127 127 127 127 127 127 127 127 127)))
        (local.set $nanSecond (i8x16.eq (v128.and (local.get $second) (v128.const i8x16 127 127 127 127 127 127 127 127 127 127 127 127 127 127 127 127))
          (v128.const i8x16 127 127 127 127 127 127 127 127 127 127 127 127 127 127 127 127)))
        ;; Four codes each into the top byte of a lane, shifted down to f32 bits of value · 2^-120,
        ;; times 2^120 (exact), times the scale (the one rounding).
        (local.set $w0 (f32x4.mul (f32x4.mul (v128.and (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)
          (i32x4.shr_s (i8x16.shuffle 16 16 16 0 16 16 16 1 16 16 16 2 16 16 16 3 (local.get $first) (v128.const i64x2 0 0)) (i32.const 4)))
          (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)) (local.get $scale)))
        (local.set $w1 (f32x4.mul (f32x4.mul (v128.and (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)
          (i32x4.shr_s (i8x16.shuffle 16 16 16 4 16 16 16 5 16 16 16 6 16 16 16 7 (local.get $first) (v128.const i64x2 0 0)) (i32.const 4)))
          (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)) (local.get $scale)))
        (local.set $w2 (f32x4.mul (f32x4.mul (v128.and (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)
          (i32x4.shr_s (i8x16.shuffle 16 16 16 8 16 16 16 9 16 16 16 10 16 16 16 11 (local.get $first) (v128.const i64x2 0 0)) (i32.const 4)))
          (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)) (local.get $scale)))
        (local.set $w3 (f32x4.mul (f32x4.mul (v128.and (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)
          (i32x4.shr_s (i8x16.shuffle 16 16 16 12 16 16 16 13 16 16 16 14 16 16 16 15 (local.get $first) (v128.const i64x2 0 0)) (i32.const 4)))
          (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)) (local.get $scale)))
        (local.set $w4 (f32x4.mul (f32x4.mul (v128.and (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)
          (i32x4.shr_s (i8x16.shuffle 16 16 16 0 16 16 16 1 16 16 16 2 16 16 16 3 (local.get $second) (v128.const i64x2 0 0)) (i32.const 4)))
          (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)) (local.get $scale)))
        (local.set $w5 (f32x4.mul (f32x4.mul (v128.and (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)
          (i32x4.shr_s (i8x16.shuffle 16 16 16 4 16 16 16 5 16 16 16 6 16 16 16 7 (local.get $second) (v128.const i64x2 0 0)) (i32.const 4)))
          (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)) (local.get $scale)))
        (local.set $w6 (f32x4.mul (f32x4.mul (v128.and (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)
          (i32x4.shr_s (i8x16.shuffle 16 16 16 8 16 16 16 9 16 16 16 10 16 16 16 11 (local.get $second) (v128.const i64x2 0 0)) (i32.const 4)))
          (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)) (local.get $scale)))
        (local.set $w7 (f32x4.mul (f32x4.mul (v128.and (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)
          (i32x4.shr_s (i8x16.shuffle 16 16 16 12 16 16 16 13 16 16 16 14 16 16 16 15 (local.get $second) (v128.const i64x2 0 0)) (i32.const 4)))
          (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)) (local.get $scale)))
        ;; A NaN code's lane becomes NaN (all ones), as the table decoding makes it.
        (if (v128.any_true (v128.or (local.get $nanFirst) (local.get $nanSecond)))
          (then
            (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nanFirst) (local.get $nanFirst))))
            (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nanFirst) (local.get $nanFirst))))
            (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nanFirst) (local.get $nanFirst))))
            (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nanFirst) (local.get $nanFirst))))
            (local.set $w4 (v128.or (local.get $w4) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nanSecond) (local.get $nanSecond))))
            (local.set $w5 (v128.or (local.get $w5) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nanSecond) (local.get $nanSecond))))
            (local.set $w6 (v128.or (local.get $w6) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nanSecond) (local.get $nanSecond))))
            (local.set $w7 (v128.or (local.get $w7) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nanSecond) (local.get $nanSecond))))
))
        (v128.store offset=0 (local.get $out) (local.get $w0))
        (v128.store offset=16 (local.get $out) (local.get $w1))
        (v128.store offset=32 (local.get $out) (local.get $w2))
        (v128.store offset=48 (local.get $out) (local.get $w3))
        (v128.store offset=64 (local.get $out) (local.get $w4))
        (v128.store offset=80 (local.get $out) (local.get $w5))
        (v128.store offset=96 (local.get $out) (local.get $w6))
        (v128.store offset=112 (local.get $out) (local.get $w7))
        (local.set $out (i32.add (local.get $out) (i32.const 128)))
        (local.set $rowCodes (i32.add (local.get $rowCodes) (i32.const 32)))
        (br_if $blocks32 (i32.lt_u
          (local.tee $blk (i32.add (local.get $blk) (i32.const 1)))
          (local.get $nBlocks))))
      (local.set $codes (i32.add (local.get $codes) (local.get $K)))
      ;; The next row starts a new band of rows: its scales are the next scale row.
      (local.set $inBand (i32.add (local.get $inBand) (i32.const 1)))
      (if (i32.ge_u (local.get $inBand) (local.get $blockRows))
        (then
          (local.set $inBand (i32.const 0))
          (local.set $scales (i32.add (local.get $scales) (local.get $scaleRowBytes)))))
      (br_if $rows (i32.lt_u
        (local.tee $n (i32.add (local.get $n) (i32.const 1)))
        (local.get $N))))))
