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
;; 1; 128x128 tiles: 128 and 4). K is a multiple of 32.
;;
;; A code's f32 bits with its sign at bit 31 and its seven exponent and mantissa bits at bits 20-26
;; are the value times 2^-120 exactly (E4M3's subnormals land on f32 subnormals). Those bits' upper
;; half is the 16-bit word code·2^8 shifted right by 4 arithmetically (the sign fills bits 11-15)
;; then masked with 0x87f0. Per 8 codes: one swizzle puts each code in the high byte of a word (a
;; zero below it), in the order 0 4 1 5 2 6 3 7, and one shift moves all eight; then each 32-bit
;; lane's low word, shifted up 16, is a weight of the first four, and its high word, masked, one of
;; the next four: no shuffle to widen. Times the block's scale·2^120 (exact while it is finite, a
;; scale below 2^8; else times 2^120, exact, then times the scale) is the one rounding
;; ../matmul-kernel.ts's table decoding does. 0x7f and 0xff, E4M3FN's NaN, become NaN (all ones;
;; a check once per 32 codes). ../matmul-kernel.ts decodes a chunk of rows with it into scratch and
;; runs ./matmul-tile.wat over them, so the result is that tile's on the unpacked weight bit for
;; bit. The swizzles' constant indices are below 16 or have the top bit set (a zero), so plain
;; i8x16.swizzle is one byte shuffle. Its `.lanes` builds (scripts/fp8-lanes.mjs) read codes the
;; loader re-laid in formats/fp8-lanes.ts's order, where the same 16 bytes loaded again one byte
;; lower (codes 0-7: each word's high byte then holds the byte that was below it; the one byte read
;; before a weight's codes falls below the mask) or the codes as they are (8-15) stand for the two
;; swizzles: 1.19x [1.15, 1.22] the rows' speed with a 16-bit shift for the lower load. Its
;; `.quads` builds (scripts/fp8-quads.mjs, from `.lanes`) read codes the loader re-laid in
;; formats/fp8-quads.ts's order, each group of four rows one run block by block: fp8 then reads
;; one sequential stream, rows 1-3 at fixed offsets from row 0, and nothing ahead, and decode
;; decodes four rows a group, block by block, so it too reads the codes once in their order; a
;; chunk they get starts at a multiple of four rows and holds whole groups.
;;
;;   fp8(K, M, x, codes, scales, scaleRowBytes, blocksPerScale, blockRows, band0, acc, o, N, ldo):
;;     for n < N, m < M: f32 at byte o + m*ldo + 4n = Σ_k x[m*K + k] · w_n[k]
;;
;; decodes each block as decode does but puts each vector of four weights into a multiply-add at
;; once instead of into scratch (the FP8 matmul at one input row; acc is 64 bytes of scratch),
;; each low word copied up by a byte shuffle rather than shifted (on Intel cores vector shifts share
;; ports 0 and 1 with the multiply-adds, byte shuffles take ports 1 and 5; decode, whose products
;; go to stores, ran 0.95x [0.90, 1.00] with the shuffle, so it keeps the shift), in
;; ./matmul-tile.wat's order at one input row as ./mxfp4-rows.wat does (four rows in flight, the
;; same groups of rows, each input row decoding again, each half block's four input vectors loaded
;; once for the four rows); so again the tile's bits. Unlike decode it takes the scales times
;; 2^120 already, each finite (../matmul-kernel.ts copies a weight's once, WeightParts'
;; fp8FoldedScales), each splat by its load (one vbroadcastss, no multiply: 1.06x [1.04, 1.08]).
;; It checks for NaN's codes per 16; its `.nan-free` build (scripts/build-kernels.mjs), which the
;; engine runs on weights with no NaN code (WeightParts' fp8NanFree), drops that test, seven x64
;; instructions of some 33 per row and 16 codes, and two of the registers V8 spilled. Each row's
;; sum is stored after each 16 codes (never read back), which keeps V8 from scheduling the next
;; codes' loads and decode first and spilling (without: 0.62x).
;;
;;   scaleInput(K, M, x, scales, blocksPerScale, out): for m < M, k < K,
;;     f32 at byte out + 4(m*K + k) = x[m*K + k] · scale_k · 2^64
;;
;; where scale_k is the f32 at scales + 4·floor(k / (32·blocksPerScale)) divided by 2^120 (a band's
;; row of the folded scales fp8 takes): the input of the `.scaled` builds' fp8
;; (scripts/fp8-scaled.mjs), which multiplies codes as value·2^-120 by it with no scale of its own,
;; so one scaled input serves every row of a band (128x128 tiles: 128 rows). The scale·2^-56 is
;; exact (a power-of-two multiple of a normal f32); its product with x is the one rounding.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "decode")
    (param $K i32) (param $codes i32) (param $scales i32) (param $scaleRowBytes i32)
    (param $blocksPerScale i32) (param $blockRows i32) (param $band0 i32) (param $out i32) (param $N i32)
    (local $n i32) (local $groupEnd i32) (local $groupBytes i32) (local $r i32) (local $group i32)
    (local $rowBytes i32) (local $nextBlock i32) (local $rowOut i32) (local $sOff i32) (local $inScale i32)
    (local $groupScales i32) (local $groupInBand i32) (local $rowScales i32) (local $inBand i32)
    (local $s f32) (local $folded f32)
    (local $first v128) (local $second v128) (local $nanFirst v128) (local $nanSecond v128)
    (local $scale v128) (local $t v128)
    (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128)
    (local $w4 v128) (local $w5 v128) (local $w6 v128) (local $w7 v128)
    (local.set $rowBytes (i32.shl (local.get $K) (i32.const 2)))
    (if (i32.or (i32.eqz (local.get $N)) (i32.lt_u (local.get $K) (i32.const 32))) (then (return)))
    ;; Rows are decoded in groups, each block of 32 of the group's rows in turn, so the codes are
    ;; read in their order: a group is one row here, four in the `.quads` build (whose chunks are
    ;; whole groups, each one run block by block), read in one pass.
    (local.set $group (i32.const 1))
    (local.set $groupBytes (i32.mul (i32.and (local.get $K) (i32.const -32)) (local.get $group)))
    ;; From the group's last row in a block to its first in the next.
    (local.set $nextBlock (i32.sub (i32.const 128)
      (i32.mul (i32.sub (local.get $group) (i32.const 1)) (local.get $rowBytes))))
    (loop $groups
      (local.set $groupEnd (i32.add (local.get $codes) (local.get $groupBytes)))
      (local.set $r (i32.const 0))
      (local.set $sOff (i32.const 0))
      (local.set $inScale (i32.const 0))
      (local.set $rowOut (local.get $out))
      ;; Row n's scale row (of the band it lies in, counted from band0) and its place in the band.
      (local.set $groupScales (i32.add (local.get $scales) (i32.mul (local.get $scaleRowBytes)
        (i32.div_u (i32.add (local.get $band0) (local.get $n)) (local.get $blockRows)))))
      (local.set $groupInBand (i32.rem_u (i32.add (local.get $band0) (local.get $n)) (local.get $blockRows)))
      (local.set $rowScales (local.get $groupScales))
      (local.set $inBand (local.get $groupInBand))
      (loop $blocks32
        ;; 32 weights of row n + r: 32 bytes of codes and their block's scale.
        (local.set $first (v128.load (local.get $codes)))
        (local.set $second (v128.load offset=16 (local.get $codes)))
        (local.set $s (f32.load (i32.add (local.get $rowScales) (local.get $sOff))))
        (local.set $folded (f32.mul (local.get $s) (f32.const 0x1p120)))
        ;; Codes 0-7, 8-15, 16-23, 24-31: their words, then two lanes of four weights each.
        (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $first)
          (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
        (local.set $w0 (v128.and (i32x4.shl (local.get $t) (i32.const 16)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
        (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
        (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $first)
          (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
        (local.set $w2 (v128.and (i32x4.shl (local.get $t) (i32.const 16)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
        (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
        (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $second)
          (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
        (local.set $w4 (v128.and (i32x4.shl (local.get $t) (i32.const 16)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
        (local.set $w5 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
        (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $second)
          (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
        (local.set $w6 (v128.and (i32x4.shl (local.get $t) (i32.const 16)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
        (local.set $w7 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
        ;; A scale from 2^8 up (or not finite): times 2^120 first, exactly, then times the scale.
        (if (f32.lt (f32.abs (local.get $folded)) (f32.const inf))
          (then (local.set $scale (f32x4.splat (local.get $folded))))
          (else
            (local.set $scale (f32x4.splat (local.get $s)))
            (local.set $w0 (f32x4.mul (local.get $w0) (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)))
            (local.set $w1 (f32x4.mul (local.get $w1) (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)))
            (local.set $w2 (f32x4.mul (local.get $w2) (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)))
            (local.set $w3 (f32x4.mul (local.get $w3) (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)))
            (local.set $w4 (f32x4.mul (local.get $w4) (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)))
            (local.set $w5 (f32x4.mul (local.get $w5) (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)))
            (local.set $w6 (f32x4.mul (local.get $w6) (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)))
            (local.set $w7 (f32x4.mul (local.get $w7) (v128.const f32x4 0x1p120 0x1p120 0x1p120 0x1p120)))))
        (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
        (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
        (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
        (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
        (local.set $w4 (f32x4.mul (local.get $w4) (local.get $scale)))
        (local.set $w5 (f32x4.mul (local.get $w5) (local.get $scale)))
        (local.set $w6 (f32x4.mul (local.get $w6) (local.get $scale)))
        (local.set $w7 (f32x4.mul (local.get $w7) (local.get $scale)))
        ;; NaN's codes (0x7f, 0xff) among the 32: a code doubled (its sign dropped) is 0xfe only
        ;; for them, and the larger of two such bytes is 0xfe when either is.
        (if (v128.any_true (i8x16.eq (i8x16.max_u (i8x16.add (local.get $first) (local.get $first))
              (i8x16.add (local.get $second) (local.get $second)))
            (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254)))
          (then
            ;; A NaN code's lane becomes NaN (all ones), as the table decoding makes it.
            (local.set $nanFirst (i8x16.eq (i8x16.add (local.get $first) (local.get $first))
              (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254)))
            (local.set $nanSecond (i8x16.eq (i8x16.add (local.get $second) (local.get $second))
              (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254)))
            (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nanFirst) (local.get $nanFirst))))
            (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nanFirst) (local.get $nanFirst))))
            (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nanFirst) (local.get $nanFirst))))
            (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nanFirst) (local.get $nanFirst))))
            (local.set $w4 (v128.or (local.get $w4) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nanSecond) (local.get $nanSecond))))
            (local.set $w5 (v128.or (local.get $w5) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nanSecond) (local.get $nanSecond))))
            (local.set $w6 (v128.or (local.get $w6) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nanSecond) (local.get $nanSecond))))
            (local.set $w7 (v128.or (local.get $w7) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nanSecond) (local.get $nanSecond))))))
        (v128.store offset=0 (local.get $rowOut) (local.get $w0))
        (v128.store offset=16 (local.get $rowOut) (local.get $w1))
        (v128.store offset=32 (local.get $rowOut) (local.get $w2))
        (v128.store offset=48 (local.get $rowOut) (local.get $w3))
        (v128.store offset=64 (local.get $rowOut) (local.get $w4))
        (v128.store offset=80 (local.get $rowOut) (local.get $w5))
        (v128.store offset=96 (local.get $rowOut) (local.get $w6))
        (v128.store offset=112 (local.get $rowOut) (local.get $w7))
        (local.set $codes (i32.add (local.get $codes) (i32.const 32)))
        ;; The group's next row in this block, or after its last the first in the next block (whose
        ;; scale is the next along the scale row every blocksPerScale blocks).
        (if (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (local.get $group))
          (then
            (local.set $rowOut (i32.add (local.get $rowOut) (local.get $rowBytes)))
            ;; A row starting a new band takes the next scale row.
            (if (i32.eq (local.tee $inBand (i32.add (local.get $inBand) (i32.const 1))) (local.get $blockRows))
              (then
                (local.set $inBand (i32.const 0))
                (local.set $rowScales (i32.add (local.get $rowScales) (local.get $scaleRowBytes))))))
          (else
            (local.set $r (i32.const 0))
            (local.set $rowScales (local.get $groupScales))
            (local.set $inBand (local.get $groupInBand))
            (local.set $rowOut (i32.add (local.get $rowOut) (local.get $nextBlock)))
            (if (i32.eq (local.tee $inScale (i32.add (local.get $inScale) (i32.const 1))) (local.get $blocksPerScale))
              (then
                (local.set $inScale (i32.const 0))
                (local.set $sOff (i32.add (local.get $sOff) (i32.const 4)))))))
        (br_if $blocks32 (i32.lt_u (local.get $codes) (local.get $groupEnd))))
      (local.set $out (i32.add (local.get $out) (i32.mul (local.get $group) (local.get $rowBytes))))
      (br_if $groups (i32.lt_u
        (local.tee $n (i32.add (local.get $n) (local.get $group)))
        (local.get $N)))))

  (func (export "fp8")
    (param $K i32) (param $M i32) (param $x i32) (param $codes i32) (param $scales i32)
    (param $scaleRowBytes i32) (param $blocksPerScale i32) (param $blockRows i32) (param $band0 i32)
    (param $acc i32) (param $o i32) (param $N i32) (param $ldo i32)
    (local $nBlocks i32) (local $step i32) (local $rowStep i32) (local $m i32) (local $n i32) (local $last i32)
    (local $blk i32) (local $sOff i32) (local $inScale i32) (local $xp i32) (local $op i32)
    (local $near i32) (local $ahead i32) (local $aheadStep i32)
    (local $c0 i32) (local $c1 i32) (local $c2 i32) (local $c3 i32)
    (local $sp0 i32) (local $sp1 i32) (local $sp2 i32) (local $sp3 i32)
    (local $v v128) (local $t v128) (local $nan v128) (local $scale v128)
    (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $nBlocks (i32.shr_u (local.get $K) (i32.const 5)))
    (if (i32.or (i32.or (i32.eqz (local.get $N)) (i32.eqz (local.get $M))) (i32.eqz (local.get $nBlocks)))
      (then (return)))
    ;; Groups of four consecutive rows, or (N < 4) of one row four times.
    (if (i32.ge_u (local.get $N) (i32.const 4))
      (then
        (local.set $step (i32.const 1))
        (local.set $rowStep (local.get $K))
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
        (local.set $c0 (i32.add (local.get $codes) (i32.mul (local.get $n) (local.get $K))))
        (local.set $c1 (i32.add (local.get $c0) (local.get $rowStep)))
        (local.set $c2 (i32.add (local.get $c1) (local.get $rowStep)))
        (local.set $c3 (i32.add (local.get $c2) (local.get $rowStep)))
        ;; Each row's scale row: the band its row lies in, counted from band0.
        (local.set $sp0 (i32.add (local.get $scales) (i32.mul (local.get $scaleRowBytes)
          (i32.div_u (i32.add (local.get $band0) (i32.add (local.get $n) (i32.mul (local.get $step) (i32.const 0))))
            (local.get $blockRows)))))
        (local.set $sp1 (i32.add (local.get $scales) (i32.mul (local.get $scaleRowBytes)
          (i32.div_u (i32.add (local.get $band0) (i32.add (local.get $n) (i32.mul (local.get $step) (i32.const 1))))
            (local.get $blockRows)))))
        (local.set $sp2 (i32.add (local.get $scales) (i32.mul (local.get $scaleRowBytes)
          (i32.div_u (i32.add (local.get $band0) (i32.add (local.get $n) (i32.mul (local.get $step) (i32.const 2))))
            (local.get $blockRows)))))
        (local.set $sp3 (i32.add (local.get $scales) (i32.mul (local.get $scaleRowBytes)
          (i32.div_u (i32.add (local.get $band0) (i32.add (local.get $n) (i32.mul (local.get $step) (i32.const 3))))
            (local.get $blockRows)))))
        ;; The next group's codes, two cache lines a block (its four rows' 4K bytes over this
        ;; group's K/32 blocks), read ahead as ./mxfp4-rows.wat reads its next group's; else (the
        ;; next group not four whole rows of this call, or K > 8192) row 0's own block, twice.
        (local.set $near (i32.and (i32.le_u (i32.add (local.get $n) (i32.const 8)) (local.get $N))
          (i32.le_u (local.get $K) (i32.const 8192))))
        (local.set $ahead (select (i32.add (local.get $c3) (local.get $K)) (local.get $c0) (local.get $near)))
        (local.set $aheadStep (select (i32.const 128) (i32.const 32) (local.get $near)))
        (local.set $sOff (i32.const 0))
        (local.set $inScale (i32.const 0))
        (local.set $blk (i32.const 0))
        (loop $blocks32
          (drop (i32.load8_u (local.get $ahead)))
          (drop (i32.load8_u (i32.add (local.get $ahead) (i32.shr_u (local.get $aheadStep) (i32.const 1)))))
          (local.set $ahead (i32.add (local.get $ahead) (local.get $aheadStep)))
          ;; First half: the block's first 16 inputs in four registers, then each row's first 16
          ;; weights (its block's scale, times 2^120 already, its codes decoded as decode decodes them) into
          ;; its multiply-adds with them.
          (local.set $x0 (v128.load offset=0 (local.get $xp)))
          (local.set $x1 (v128.load offset=16 (local.get $xp)))
          (local.set $x2 (v128.load offset=32 (local.get $xp)))
          (local.set $x3 (v128.load offset=48 (local.get $xp)))
          ;; Row 0.
          (local.set $scale (v128.load32_splat (i32.add (local.get $sp0) (local.get $sOff))))
          (local.set $v (v128.load offset=0 (local.get $c0)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
          (local.set $w0 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
          (local.set $w2 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
          (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
          (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
          (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
          (if (v128.any_true (local.tee $nan (i8x16.eq (i8x16.add (local.get $v) (local.get $v)) (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254))))
            (then
              (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nan) (local.get $nan))))
              (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nan) (local.get $nan))))
              (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nan) (local.get $nan))))
              (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nan) (local.get $nan))))))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x0) (local.get $w0) (local.get $a0)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x1) (local.get $w1) (local.get $a0)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x2) (local.get $w2) (local.get $a0)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x3) (local.get $w3) (local.get $a0)))
          (v128.store offset=0 (local.get $acc) (local.get $a0))
          ;; Row 1.
          (local.set $scale (v128.load32_splat (i32.add (local.get $sp1) (local.get $sOff))))
          (local.set $v (v128.load offset=0 (local.get $c1)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
          (local.set $w0 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
          (local.set $w2 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
          (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
          (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
          (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
          (if (v128.any_true (local.tee $nan (i8x16.eq (i8x16.add (local.get $v) (local.get $v)) (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254))))
            (then
              (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nan) (local.get $nan))))
              (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nan) (local.get $nan))))
              (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nan) (local.get $nan))))
              (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nan) (local.get $nan))))))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x0) (local.get $w0) (local.get $a1)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x1) (local.get $w1) (local.get $a1)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x2) (local.get $w2) (local.get $a1)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x3) (local.get $w3) (local.get $a1)))
          (v128.store offset=16 (local.get $acc) (local.get $a1))
          ;; Row 2.
          (local.set $scale (v128.load32_splat (i32.add (local.get $sp2) (local.get $sOff))))
          (local.set $v (v128.load offset=0 (local.get $c2)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
          (local.set $w0 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
          (local.set $w2 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
          (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
          (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
          (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
          (if (v128.any_true (local.tee $nan (i8x16.eq (i8x16.add (local.get $v) (local.get $v)) (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254))))
            (then
              (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nan) (local.get $nan))))
              (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nan) (local.get $nan))))
              (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nan) (local.get $nan))))
              (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nan) (local.get $nan))))))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x0) (local.get $w0) (local.get $a2)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x1) (local.get $w1) (local.get $a2)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x2) (local.get $w2) (local.get $a2)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x3) (local.get $w3) (local.get $a2)))
          (v128.store offset=32 (local.get $acc) (local.get $a2))
          ;; Row 3.
          (local.set $scale (v128.load32_splat (i32.add (local.get $sp3) (local.get $sOff))))
          (local.set $v (v128.load offset=0 (local.get $c3)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
          (local.set $w0 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
          (local.set $w2 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
          (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
          (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
          (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
          (if (v128.any_true (local.tee $nan (i8x16.eq (i8x16.add (local.get $v) (local.get $v)) (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254))))
            (then
              (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nan) (local.get $nan))))
              (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nan) (local.get $nan))))
              (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nan) (local.get $nan))))
              (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nan) (local.get $nan))))))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x0) (local.get $w0) (local.get $a3)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x1) (local.get $w1) (local.get $a3)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x2) (local.get $w2) (local.get $a3)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x3) (local.get $w3) (local.get $a3)))
          (v128.store offset=48 (local.get $acc) (local.get $a3))
          ;; Second half: the next 16 inputs, each row's next 16 weights.
          (local.set $x0 (v128.load offset=64 (local.get $xp)))
          (local.set $x1 (v128.load offset=80 (local.get $xp)))
          (local.set $x2 (v128.load offset=96 (local.get $xp)))
          (local.set $x3 (v128.load offset=112 (local.get $xp)))
          ;; Row 0.
          (local.set $scale (v128.load32_splat (i32.add (local.get $sp0) (local.get $sOff))))
          (local.set $v (v128.load offset=16 (local.get $c0)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
          (local.set $w0 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
          (local.set $w2 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
          (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
          (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
          (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
          (if (v128.any_true (local.tee $nan (i8x16.eq (i8x16.add (local.get $v) (local.get $v)) (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254))))
            (then
              (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nan) (local.get $nan))))
              (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nan) (local.get $nan))))
              (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nan) (local.get $nan))))
              (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nan) (local.get $nan))))))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x0) (local.get $w0) (local.get $a0)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x1) (local.get $w1) (local.get $a0)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x2) (local.get $w2) (local.get $a0)))
          (local.set $a0 (f32x4.relaxed_madd (local.get $x3) (local.get $w3) (local.get $a0)))
          (v128.store offset=0 (local.get $acc) (local.get $a0))
          ;; Row 1.
          (local.set $scale (v128.load32_splat (i32.add (local.get $sp1) (local.get $sOff))))
          (local.set $v (v128.load offset=16 (local.get $c1)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
          (local.set $w0 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
          (local.set $w2 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
          (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
          (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
          (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
          (if (v128.any_true (local.tee $nan (i8x16.eq (i8x16.add (local.get $v) (local.get $v)) (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254))))
            (then
              (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nan) (local.get $nan))))
              (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nan) (local.get $nan))))
              (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nan) (local.get $nan))))
              (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nan) (local.get $nan))))))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x0) (local.get $w0) (local.get $a1)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x1) (local.get $w1) (local.get $a1)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x2) (local.get $w2) (local.get $a1)))
          (local.set $a1 (f32x4.relaxed_madd (local.get $x3) (local.get $w3) (local.get $a1)))
          (v128.store offset=16 (local.get $acc) (local.get $a1))
          ;; Row 2.
          (local.set $scale (v128.load32_splat (i32.add (local.get $sp2) (local.get $sOff))))
          (local.set $v (v128.load offset=16 (local.get $c2)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
          (local.set $w0 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
          (local.set $w2 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
          (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
          (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
          (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
          (if (v128.any_true (local.tee $nan (i8x16.eq (i8x16.add (local.get $v) (local.get $v)) (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254))))
            (then
              (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nan) (local.get $nan))))
              (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nan) (local.get $nan))))
              (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nan) (local.get $nan))))
              (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nan) (local.get $nan))))))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x0) (local.get $w0) (local.get $a2)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x1) (local.get $w1) (local.get $a2)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x2) (local.get $w2) (local.get $a2)))
          (local.set $a2 (f32x4.relaxed_madd (local.get $x3) (local.get $w3) (local.get $a2)))
          (v128.store offset=32 (local.get $acc) (local.get $a2))
          ;; Row 3.
          (local.set $scale (v128.load32_splat (i32.add (local.get $sp3) (local.get $sOff))))
          (local.set $v (v128.load offset=16 (local.get $c3)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7)) (i32.const 4)))
          (local.set $w0 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w1 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $t (i16x8.shr_s (i8x16.swizzle (local.get $v) (v128.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15)) (i32.const 4)))
          (local.set $w2 (v128.and (i8x16.swizzle (local.get $t) (v128.const i8x16 0 1 0 1 4 5 4 5 8 9 8 9 12 13 12 13)) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w3 (v128.and (local.get $t) (v128.const i32x4 0x87f00000 0x87f00000 0x87f00000 0x87f00000)))
          (local.set $w0 (f32x4.mul (local.get $w0) (local.get $scale)))
          (local.set $w1 (f32x4.mul (local.get $w1) (local.get $scale)))
          (local.set $w2 (f32x4.mul (local.get $w2) (local.get $scale)))
          (local.set $w3 (f32x4.mul (local.get $w3) (local.get $scale)))
          (if (v128.any_true (local.tee $nan (i8x16.eq (i8x16.add (local.get $v) (local.get $v)) (v128.const i8x16 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254 254))))
            (then
              (local.set $w0 (v128.or (local.get $w0) (i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (local.get $nan) (local.get $nan))))
              (local.set $w1 (v128.or (local.get $w1) (i8x16.shuffle 4 4 4 4 5 5 5 5 6 6 6 6 7 7 7 7 (local.get $nan) (local.get $nan))))
              (local.set $w2 (v128.or (local.get $w2) (i8x16.shuffle 8 8 8 8 9 9 9 9 10 10 10 10 11 11 11 11 (local.get $nan) (local.get $nan))))
              (local.set $w3 (v128.or (local.get $w3) (i8x16.shuffle 12 12 12 12 13 13 13 13 14 14 14 14 15 15 15 15 (local.get $nan) (local.get $nan))))))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x0) (local.get $w0) (local.get $a3)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x1) (local.get $w1) (local.get $a3)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x2) (local.get $w2) (local.get $a3)))
          (local.set $a3 (f32x4.relaxed_madd (local.get $x3) (local.get $w3) (local.get $a3)))
          (v128.store offset=48 (local.get $acc) (local.get $a3))
          (local.set $c0 (i32.add (local.get $c0) (i32.const 32)))
          (local.set $c1 (i32.add (local.get $c1) (i32.const 32)))
          (local.set $c2 (i32.add (local.get $c2) (i32.const 32)))
          (local.set $c3 (i32.add (local.get $c3) (i32.const 32)))
          (local.set $xp (i32.add (local.get $xp) (i32.const 128)))
          ;; The next block's scale: the next one along the scale row every blocksPerScale blocks.
          (local.set $inScale (i32.add (local.get $inScale) (i32.const 1)))
          (if (i32.eq (local.get $inScale) (local.get $blocksPerScale))
            (then
              (local.set $inScale (i32.const 0))
              (local.set $sOff (i32.add (local.get $sOff) (i32.const 4)))))
          (br_if $blocks32 (i32.lt_u
            (local.tee $blk (i32.add (local.get $blk) (i32.const 1)))
            (local.get $nBlocks))))
        ;; (l0 + l1) + (l2 + l3) of each row's sum into its column (one row, N < 4: once).
        (local.set $op (i32.add
          (i32.add (local.get $o) (i32.mul (local.get $m) (local.get $ldo)))
          (i32.shl (local.get $n) (i32.const 2))))
        (f32.store offset=0 (local.get $op) (f32.add
              (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
              (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
        (if (local.get $step)
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
        ;; The next group: four rows on, the last one from N - 4 (one row on for N < 4).
        (if (i32.lt_u (local.get $n) (local.get $last))
          (then
            (local.set $n (i32.add (local.get $n) (select (i32.const 4) (i32.const 1) (local.get $step))))
            (if (i32.gt_u (local.get $n) (local.get $last)) (then (local.set $n (local.get $last))))
            (br $groups))))
      (br_if $inputs (i32.lt_u
        (local.tee $m (i32.add (local.get $m) (i32.const 1)))
        (local.get $M)))))

  (func (export "scaleInput")
    (param $K i32) (param $M i32) (param $x i32) (param $scales i32) (param $blocksPerScale i32) (param $out i32)
    (local $end i32) (local $rowEnd i32) (local $inScale i32) (local $s i32) (local $scale v128)
    (if (i32.or (i32.eqz (local.get $M)) (i32.lt_u (local.get $K) (i32.const 32))) (then (return)))
    (local.set $end (i32.add (local.get $x) (i32.mul (local.get $M) (i32.shl (local.get $K) (i32.const 2)))))
    (loop $rows
      (local.set $rowEnd (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
      (local.set $s (local.get $scales))
      (local.set $inScale (i32.const 0))
      (loop $blocks32
        (local.set $scale (f32x4.splat (f32.mul (f32.load (local.get $s)) (f32.const 0x1p-56))))
        (v128.store offset=0 (local.get $out) (f32x4.mul (v128.load offset=0 (local.get $x)) (local.get $scale)))
        (v128.store offset=16 (local.get $out) (f32x4.mul (v128.load offset=16 (local.get $x)) (local.get $scale)))
        (v128.store offset=32 (local.get $out) (f32x4.mul (v128.load offset=32 (local.get $x)) (local.get $scale)))
        (v128.store offset=48 (local.get $out) (f32x4.mul (v128.load offset=48 (local.get $x)) (local.get $scale)))
        (v128.store offset=64 (local.get $out) (f32x4.mul (v128.load offset=64 (local.get $x)) (local.get $scale)))
        (v128.store offset=80 (local.get $out) (f32x4.mul (v128.load offset=80 (local.get $x)) (local.get $scale)))
        (v128.store offset=96 (local.get $out) (f32x4.mul (v128.load offset=96 (local.get $x)) (local.get $scale)))
        (v128.store offset=112 (local.get $out) (f32x4.mul (v128.load offset=112 (local.get $x)) (local.get $scale)))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $out (i32.add (local.get $out) (i32.const 128)))
        ;; The next scale along the row every blocksPerScale blocks.
        (if (i32.eq (local.tee $inScale (i32.add (local.get $inScale) (i32.const 1))) (local.get $blocksPerScale))
          (then
            (local.set $inScale (i32.const 0))
            (local.set $s (i32.add (local.get $s) (i32.const 4)))))
        (br_if $blocks32 (i32.lt_u (local.get $x) (local.get $rowEnd))))
      (br_if $rows (i32.lt_u (local.get $x) (local.get $end)))))
)
