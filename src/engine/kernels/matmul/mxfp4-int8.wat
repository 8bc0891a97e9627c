;; MXFP4 rows dotted with an input quantized to int8 (the integer MXFP4 matmul, `mxfp4=int8`):
;;
;;   mxfp4_int8(K, M, q, blocks, exps, expStride, o, N, ldo): for n < N, m < M:
;;     f32 at byte o + m*ldo + 4n = Σ_blocks b dot(m, n, b) · (s(m, b) · 2^(e(n, b) - 128))
;;
;; Row n's codes are stored as in ./mxfp4-rows.wat (K/2 bytes of E2M1 codes at blocks + n*K/2, low
;; nibble first). Its E8M0 exponents are laid out by block (./int8-exponents.ts, made when the weight
;; is first read on this path): e(n, b) - 1 at byte exps + b*expStride + n, so four consecutive
;; rows' exponents of a block are one 32-bit load, each e in [2, 254] (a half scale 2^(e - 128) is
;; then a normal f32 whose bits are (e - 1) << 23), and 3 readable bytes past the last row's
;; (expStride >= N + 3). The
;; input, quantized by `quantize` below (./mxfp4-int8.ts's quantizeInput is its plain reference),
;; holds for each row m and block b of 32 values 64 bytes at q + 64(m*K/32 + b): the 16 int8
;; values the codes' low nibbles meet, the 16 the high ones meet, an i16x8 correction, the block's
;; f32 scale s(m, b), and 12 zero bytes. For codes in OCP order (low nibble of byte j value 2j)
;; that is the values of even k, then of odd k; for codes in halves order
;; (formats/mxfp4-halves.ts: value v(j) and v(j) + 16, v = 0 4 1 5 2 6 3 7 8 12 9 13 10 14 11 15)
;; the values of k = v(j), then of v(j) + 16. `quantize` writes both forms, the halves one
;; M*K/32 blocks after the OCP one; this kernel reads either alike.
;;
;; Each E2M1 code becomes twice its value plus 12, an integer in [0, 24] (7 bits, as
;; i16x8.relaxed_dot_i8x16_i7x16_s needs for its second operand to be exact everywhere): low
;; nibbles meet the even inputs, high nibbles the odd ones. Each dot's i16 lane j adds the products
;; of bytes 2j and 2j + 1 (|sum| <= 2·127·24 = 6096, no saturation); the two dots' lanes added give
;; lane j the products of the inputs of bytes 2j and 2j + 1 of each half (in OCP form k 4j to
;; 4j + 3). Rows are taken four at a time, each input block
;; loaded once for the four, and their four i16x8 sums folded into one vector by two rounds of
;; interleave-and-add (32-bit lanes of two rows, then 64-bit halves of two pairs): its i16 lanes
;; 2r and 2r + 1 hold row r's products of the inputs of lanes j even and odd (in OCP form k / 4
;; even and odd, in halves form k even and odd). The correction (-12 times the sum of the same 16
;; inputs, lanes alternating) takes the 12s back out. i16 adds
;; wrap, so only the corrected values need fit, and they do (|lane| <= 16·127·12 = 24384); one
;; widening pairwise add then gives each row's block sum exactly as an i32 (|sum| <= 48768). (Not
;; i32x4.relaxed_dot_i8x16_i7x16_add_s: V8 11.3 computed it wrong in a four-row kernel, and on x64
;; without AVX-VNNI it is these instructions and a multiply-add more per row.)
;;
;; The four sums are made f32 (exactly), times the rows' scales (the four exponents' bytes spread
;; to the top byte of each 32-bit lane by a swizzle whose other indices are 0x80, giving zeros in
;; the relaxed and plain forms alike, then shifted right once: the half scales' bits; times the
;; input block's scale, rounded once), and added to one f32 sum per row in ascending blocks. Not the f32 path's bits: ./mxfp4-int8.ts states the error. K is a multiple of
;; 32.
;;
;; The loop is software-pipelined: a block's rows are dotted and their sums half folded (the pairs)
;; in one iteration, and folded the rest of the way, scaled and added in the next, beside the next
;; block's dots (the last block's term after the loop; before the first, a term of zero pairs at
;; scale 0 adds +0, so the sums are added in the same order, the same bits). In one iteration each
;; block's work is one long chain of dependent operations, and the out-of-order core then held too
;; few blocks at once to keep its vector units busy: pipelined, 1.08x on weights in L2 and
;; 1.03-1.07x on 16 of 64 random experts (its commit gives the runs). The same with the loop
;; written once (the last block's term taken by one more pass whose dots are skipped) ran 0.85x: V8
;; then compiles the loop worse; carrying the four rows' unfolded sums instead, 0.56x at M = 1; the
;; block before's term first in the loop body, 1.00x (V8 orders the operations itself). V8's own
;; instruction scheduler (--turbo-instruction-scheduling, off by default) interleaves the two
;; blocks' operations and gains ~3-4% more.
;;
;; A group's four rows are consecutive, addressed from its first by the row strides (so the loop
;; keeps few pointers: V8 spilled them when each row had its own); the last group of N >= 4 rows
;; ends at the last row, redoing rows of the group before with the same bits (so no tail loop), and
;; fewer than 4 rows are taken one at a time, a group of four copies of the row (stride 0; lanes
;; 1-3 then scale by the next rows' exponents, or the spare bytes', and are not stored).
;;
;; This kernel runs about as fast on weights streamed from memory as on weights in L2 (20-24 against
;; 22.6 G weights/s per core): its vector operations bound it, not memory. Measured against it and
;; not taken (16 of 64 random experts [2048, 1024], M = 1, per CPU-second, the same bits): codes
;; re-laid out four rows a load (each row's products in its own lanes, no interleaving, the input
;; replicated four times) 0.79x [0.69, 0.90]; two rows a load 0.91x [0.87, 0.96]; each code
;; expanded to a byte (no nibble decode, twice the bytes) 0.36x [0.34, 0.39], 1.22x from L2; a
;; group's four rows interleaved a block at a time (one stream, which needs no read-ahead) 1.01x,
;; the same as reading ahead here, where without it 0.40x (whole experts a call, trial medians).
;;
;; The swizzles are relaxed (every index is a nibble, below 16, or 0x80, at or above 128, where
;; relaxed and plain agree: one byte shuffle, where plain costs V8 a saturating add before it); the
;; .plain-dot build has plain ones. The high nibbles are shifted as 16-bit lanes then masked (V8 builds an 8-bit lane shift
;; from the same shift, a mask it rebuilds every time, and an and).
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "mxfp4_int8")
    (param $K i32) (param $M i32) (param $q i32) (param $blocks i32) (param $exps i32)
    (param $expStride i32) (param $o i32) (param $N i32) (param $ldo i32)
    (call $rows (local.get $K) (local.get $M) (local.get $q) (local.get $blocks) (local.get $exps)
      (local.get $expStride) (local.get $o) (local.get $N) (local.get $ldo) (i32.const -1)))

  ;; mxfp4_int8_list(list, count): `count` matmuls of mxfp4_int8 whose arguments lie at byte list
  ;; as 10 i32 each: mxfp4_int8's nine, then the byte offset of an f32 bias [N] added to each
  ;; output (rounded once more, as adding it after the matmul), or -1 for none. One call for all of
  ;; a token's chosen experts' projections.
  (func (export "mxfp4_int8_list") (param $list i32) (param $count i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $list) (i32.mul (local.get $count) (i32.const 40))))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $list) (local.get $end)))
        (call $rows
          (i32.load offset=0 (local.get $list)) (i32.load offset=4 (local.get $list))
          (i32.load offset=8 (local.get $list)) (i32.load offset=12 (local.get $list))
          (i32.load offset=16 (local.get $list)) (i32.load offset=20 (local.get $list))
          (i32.load offset=24 (local.get $list)) (i32.load offset=28 (local.get $list))
          (i32.load offset=32 (local.get $list)) (i32.load offset=36 (local.get $list)))
        (local.set $list (i32.add (local.get $list) (i32.const 40)))
        (br $each))))

  ;; The matmul, with a bias at byte $bias (-1: none) added to each stored output.
  (func $rows
    (param $K i32) (param $M i32) (param $q i32) (param $blocks i32) (param $exps i32)
    (param $expStride i32) (param $o i32) (param $N i32) (param $ldo i32) (param $bias i32)
    (local $n i32) (local $r0 i32) (local $m i32) (local $nBlocks i32) (local $rowBytes i32)
    (local $codeStride i32) (local $step i32)
    (local $p i32) (local $sp i32) (local $xp i32) (local $xEnd i32) (local $ahead i32) (local $ahead0 i32)
    (local $aheadStep i32) (local $p1 i32) (local $op i32) (local $bp i32)
    (local $nibbles v128) (local $lut v128) (local $spread v128)
    (local $packed v128) (local $wlo v128) (local $whi v128) (local $xe v128) (local $xo v128)
    (local $d0 v128) (local $d1 v128) (local $d2 v128) (local $d3 v128)
    (local $acc v128) (local $pairs01 v128) (local $pairs23 v128) (local $scales v128) (local $xPrev i32)
    (local.set $nBlocks (i32.shr_u (local.get $K) (i32.const 5)))
    (if (i32.or (i32.or (i32.eqz (local.get $N)) (i32.eqz (local.get $M))) (i32.eqz (local.get $nBlocks)))
      (then (return)))
    (local.set $rowBytes (i32.shr_u (local.get $K) (i32.const 1)))
    ;; Four consecutive rows a group; fewer than four rows: one row a group, repeated (stride 0).
    (local.set $codeStride (select (local.get $rowBytes) (i32.const 0) (i32.ge_u (local.get $N) (i32.const 4))))
    (local.set $step (select (i32.const 4) (i32.const 1) (i32.ge_u (local.get $N) (i32.const 4))))
    (local.set $nibbles (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
    (local.set $lut (v128.const i8x16 12 13 14 15 16 18 20 24 12 11 10 9 8 6 4 0))
    (local.set $spread (v128.const i8x16 0x80 0x80 0x80 0 0x80 0x80 0x80 1 0x80 0x80 0x80 2 0x80 0x80 0x80 3))
    (loop $rows
      ;; The group's first row: n, or the last four rows' first where fewer than four are left.
      (local.set $r0 (select (local.get $n) (i32.sub (local.get $N) (i32.const 4))
        (i32.or (i32.lt_u (local.get $N) (i32.const 4)) (i32.le_u (i32.add (local.get $n) (i32.const 4)) (local.get $N)))))
      ;; The next group, a cache line a block (its four rows are 2K bytes, K/32 lines), read ahead
      ;; so it is on its way: short rows from memory are four short streams a prefetcher barely
      ;; sees. Only where it lies within this call's rows and is near (K <= 8192); else row r0's
      ;; own block, 16 bytes a block, which it reads anyway. (16 of 64 random experts [2048, 1024]
      ;; against one group ahead: none 0.4x, half a group 0.96x, 1.5 groups 0.99x, two 0.98x;
      ;; the next matmul's first group read during a list entry's last 0.99x.)
      (local.set $ahead0 (i32.add (local.get $blocks) (i32.mul (local.get $r0) (local.get $rowBytes))))
      (local.set $aheadStep (i32.const 16))
      (if (i32.and (i32.le_u (i32.add (local.get $r0) (i32.const 8)) (local.get $N))
            (i32.and (i32.ge_u (local.get $N) (i32.const 4)) (i32.le_u (local.get $K) (i32.const 8192))))
        (then
          (local.set $ahead0 (i32.add (local.get $ahead0) (i32.shl (local.get $K) (i32.const 1))))
          (local.set $aheadStep (i32.const 64))))
      (local.set $m (i32.const 0))
      (loop $inputs
        (local.set $acc (v128.const i64x2 0 0))
        (local.set $pairs01 (v128.const i64x2 0 0))
        (local.set $pairs23 (v128.const i64x2 0 0))
        (local.set $scales (v128.const i64x2 0 0))
        (local.set $p (i32.add (local.get $blocks) (i32.mul (local.get $r0) (local.get $rowBytes))))
        (local.set $sp (i32.add (local.get $exps) (local.get $r0)))
        (local.set $ahead (local.get $ahead0))
        (local.set $xp (i32.add (local.get $q) (i32.shl (i32.mul (local.get $m) (local.get $nBlocks)) (i32.const 6))))
        (local.set $xEnd (i32.add (local.get $xp) (i32.shl (local.get $nBlocks) (i32.const 6))))
        (local.set $xPrev (local.get $xp))
        (loop $blocks32
          (local.set $xe (v128.load offset=0 (local.get $xp)))
          (local.set $xo (v128.load offset=16 (local.get $xp)))
          (drop (i32.load8_u (local.get $ahead)))
          (local.set $p1 (i32.add (local.get $p) (local.get $codeStride)))
          ;; Each row's i16x8 sum: lane j the products of bytes 2j and 2j + 1 (codes offset by 12).
          (local.set $packed (v128.load (local.get $p)))
          (local.set $wlo (i8x16.relaxed_swizzle (local.get $lut) (v128.and (local.get $packed) (local.get $nibbles))))
          (local.set $whi (i8x16.relaxed_swizzle (local.get $lut)
            (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4)) (local.get $nibbles))))
          (local.set $wlo (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xe) (local.get $wlo)))
          (local.set $whi (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xo) (local.get $whi)))
          (local.set $d0 (i16x8.add (local.get $wlo) (local.get $whi)))
          (local.set $packed (v128.load (local.get $p1)))
          (local.set $wlo (i8x16.relaxed_swizzle (local.get $lut) (v128.and (local.get $packed) (local.get $nibbles))))
          (local.set $whi (i8x16.relaxed_swizzle (local.get $lut)
            (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4)) (local.get $nibbles))))
          (local.set $wlo (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xe) (local.get $wlo)))
          (local.set $whi (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xo) (local.get $whi)))
          (local.set $d1 (i16x8.add (local.get $wlo) (local.get $whi)))
          (local.set $packed (v128.load (i32.add (local.get $p) (i32.shl (local.get $codeStride) (i32.const 1)))))
          (local.set $wlo (i8x16.relaxed_swizzle (local.get $lut) (v128.and (local.get $packed) (local.get $nibbles))))
          (local.set $whi (i8x16.relaxed_swizzle (local.get $lut)
            (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4)) (local.get $nibbles))))
          (local.set $wlo (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xe) (local.get $wlo)))
          (local.set $whi (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xo) (local.get $whi)))
          (local.set $d2 (i16x8.add (local.get $wlo) (local.get $whi)))
          (local.set $packed (v128.load (i32.add (local.get $p1) (i32.shl (local.get $codeStride) (i32.const 1)))))
          (local.set $wlo (i8x16.relaxed_swizzle (local.get $lut) (v128.and (local.get $packed) (local.get $nibbles))))
          (local.set $whi (i8x16.relaxed_swizzle (local.get $lut)
            (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4)) (local.get $nibbles))))
          (local.set $wlo (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xe) (local.get $wlo)))
          (local.set $whi (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xo) (local.get $whi)))
          (local.set $d3 (i16x8.add (local.get $wlo) (local.get $whi)))
          ;; The block before's term: the halves of its pairs (32-bit lane r is row r, its i16 lanes
          ;; j even and odd), corrected, added as i32, scaled (before the first block, 0).
          (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $scales) (f32x4.convert_i32x4_s
            (i32x4.extadd_pairwise_i16x8_s (i16x8.add (v128.load offset=32 (local.get $xPrev))
              (i16x8.add
                (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $pairs01) (local.get $pairs23))
                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $pairs01) (local.get $pairs23)))))))))
          ;; This block's pairs: rows 0 and 1, 32-bit lanes [0: l0 + l2, 1: l0 + l2, 0: l1 + l3,
          ;; 1: l1 + l3]; rows 2 and 3 alike.
          (local.set $pairs01 (i16x8.add
            (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $d0) (local.get $d1))
            (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $d0) (local.get $d1))))
          (local.set $pairs23 (i16x8.add
            (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $d2) (local.get $d3))
            (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $d2) (local.get $d3))))
          (local.set $xPrev (local.get $xp))
          ;; The four rows' half scales times the input block's scale.
          (local.set $scales (f32x4.mul (i32x4.shr_u
            (i8x16.relaxed_swizzle (v128.load32_zero (local.get $sp)) (local.get $spread)) (i32.const 1))
            (v128.load32_splat offset=48 (local.get $xp))))
          (local.set $p (i32.add (local.get $p) (i32.const 16)))
          (local.set $sp (i32.add (local.get $sp) (local.get $expStride)))
          (local.set $ahead (i32.add (local.get $ahead) (local.get $aheadStep)))
          (br_if $blocks32 (i32.lt_u
            (local.tee $xp (i32.add (local.get $xp) (i32.const 64)))
            (local.get $xEnd))))
        ;; The last block's term, as the loop adds the others.
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $scales) (f32x4.convert_i32x4_s
          (i32x4.extadd_pairwise_i16x8_s (i16x8.add (v128.load offset=32 (local.get $xPrev))
            (i16x8.add
              (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $pairs01) (local.get $pairs23))
              (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $pairs01) (local.get $pairs23)))))))))
        (local.set $op (i32.add (i32.add (local.get $o) (i32.mul (local.get $m) (local.get $ldo)))
          (i32.shl (local.get $r0) (i32.const 2))))
        (local.set $bp (i32.add (local.get $bias) (i32.shl (local.get $r0) (i32.const 2))))
        (if (i32.ge_u (local.get $N) (i32.const 4))
          (then
            (if (i32.ge_s (local.get $bias) (i32.const 0))
              (then (local.set $acc (f32x4.add (local.get $acc) (v128.load (local.get $bp))))))
            (v128.store (local.get $op) (local.get $acc)))
          (else
            (if (i32.ge_s (local.get $bias) (i32.const 0))
              (then (local.set $acc (f32x4.add (local.get $acc) (v128.load32_zero (local.get $bp))))))
            (v128.store32_lane 0 (local.get $op) (local.get $acc))))
        (br_if $inputs (i32.lt_u
          (local.tee $m (i32.add (local.get $m) (i32.const 1)))
          (local.get $M))))
      (br_if $rows (i32.lt_u
        (local.tee $n (i32.add (local.get $n) (local.get $step)))
        (local.get $N)))))

  ;; quantize(x, M, K, q): the input x [M, K] (f32 at byte x) in the layout mxfp4_int8 reads, at q
  ;; its OCP form and M*K/32 blocks later its halves form, as ./mxfp4-int8.ts's quantizeInput
  ;; writes them (the plain reference, the same bytes). Per block of
  ;; 32: amax = max |x| as the largest of the values' magnitude bits (an integer max orders them as
  ;; floats, NaN above infinity); s = amax / 127 in f32 but at least 2^-126, NaN where amax is not
  ;; finite, 0 where it is 0; q = x / s in f32 rounded to the nearest integer, ties to even (adding
  ;; 1.5·2^23, whose ulp is 1, rounds so, and the integer is then the sum's low bits), |q| <= 127;
  ;; all zero where s is not above 0 (a zero or non-finite block).
  (func (export "quantize") (param $x i32) (param $M i32) (param $K i32) (param $q i32)
    (local $blk i32) (local $count i32) (local $h i32) (local $s f32) (local $inv v128)
    (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128)
    (local $v4 v128) (local $v5 v128) (local $v6 v128) (local $v7 v128)
    (local $lo v128) (local $hi v128) (local $sums v128) (local $all v128)
    (local.set $count (i32.mul (local.get $M) (i32.shr_u (local.get $K) (i32.const 5))))
    (if (i32.eqz (local.get $count)) (then (return)))
    ;; The halves form's block, as far past the OCP form's as the form is long.
    (local.set $h (i32.add (local.get $q) (i32.shl (local.get $count) (i32.const 6))))
    (loop $blocks32
      (local.set $v0 (v128.load offset=0 (local.get $x)))
      (local.set $v1 (v128.load offset=16 (local.get $x)))
      (local.set $v2 (v128.load offset=32 (local.get $x)))
      (local.set $v3 (v128.load offset=48 (local.get $x)))
      (local.set $v4 (v128.load offset=64 (local.get $x)))
      (local.set $v5 (v128.load offset=80 (local.get $x)))
      (local.set $v6 (v128.load offset=96 (local.get $x)))
      (local.set $v7 (v128.load offset=112 (local.get $x)))
      ;; The magnitudes' bits, their largest in every lane.
      (local.set $lo (i32x4.max_s
        (i32x4.max_s
          (i32x4.max_s (v128.and (local.get $v0) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))
            (v128.and (local.get $v1) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
          (i32x4.max_s (v128.and (local.get $v2) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))
            (v128.and (local.get $v3) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
        (i32x4.max_s
          (i32x4.max_s (v128.and (local.get $v4) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))
            (v128.and (local.get $v5) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
          (i32x4.max_s (v128.and (local.get $v6) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))
            (v128.and (local.get $v7) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))))
      (local.set $lo (i32x4.max_s (local.get $lo) (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $lo) (local.get $lo))))
      (local.set $lo (i32x4.max_s (local.get $lo) (i8x16.shuffle 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 (local.get $lo) (local.get $lo))))
      (local.set $s (select
        (f32.max (f32.div (f32.reinterpret_i32 (i32x4.extract_lane 0 (local.get $lo))) (f32.const 127))
          (f32.const 0x1p-126))
        (f32.const nan)
        (i32.lt_u (i32x4.extract_lane 0 (local.get $lo)) (i32.const 0x7f800000))))
      (local.set $s (select (local.get $s) (f32.const 0) (i32x4.extract_lane 0 (local.get $lo))))
      ;; The scale, then 12 zero bytes to the block's end, in both forms.
      (v128.store offset=48 (local.get $q) (f32x4.replace_lane 0 (v128.const i64x2 0 0) (local.get $s)))
      (v128.store offset=48 (local.get $h) (f32x4.replace_lane 0 (v128.const i64x2 0 0) (local.get $s)))
      (if (f32.gt (local.get $s) (f32.const 0))
        (then
          (local.set $inv (f32x4.splat (local.get $s)))
          ;; Each value over s, rounded to an integer in the sum's low bits, taken out as i32.
          (local.set $v0 (i32x4.sub (f32x4.add (f32x4.div (local.get $v0) (local.get $inv)) (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23)) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
          (local.set $v1 (i32x4.sub (f32x4.add (f32x4.div (local.get $v1) (local.get $inv)) (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23)) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
          (local.set $v2 (i32x4.sub (f32x4.add (f32x4.div (local.get $v2) (local.get $inv)) (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23)) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
          (local.set $v3 (i32x4.sub (f32x4.add (f32x4.div (local.get $v3) (local.get $inv)) (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23)) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
          (local.set $v4 (i32x4.sub (f32x4.add (f32x4.div (local.get $v4) (local.get $inv)) (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23)) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
          (local.set $v5 (i32x4.sub (f32x4.add (f32x4.div (local.get $v5) (local.get $inv)) (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23)) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
          (local.set $v6 (i32x4.sub (f32x4.add (f32x4.div (local.get $v6) (local.get $inv)) (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23)) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
          (local.set $v7 (i32x4.sub (f32x4.add (f32x4.div (local.get $v7) (local.get $inv)) (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23)) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
          ;; As i16: k 0-7, 8-15, 16-23, 24-31; their sum's lane i adds the values of k = i mod 8.
          (local.set $v0 (i16x8.narrow_i32x4_s (local.get $v0) (local.get $v1)))
          (local.set $v1 (i16x8.narrow_i32x4_s (local.get $v2) (local.get $v3)))
          (local.set $v2 (i16x8.narrow_i32x4_s (local.get $v4) (local.get $v5)))
          (local.set $v3 (i16x8.narrow_i32x4_s (local.get $v6) (local.get $v7)))
          (local.set $all (i16x8.add (i16x8.add (local.get $v0) (local.get $v1)) (i16x8.add (local.get $v2) (local.get $v3))))
          ;; The corrections: OCP form, 32-bit lanes [k / 4 even, even, odd, odd] (lanes 0-3 of
          ;; $all and 4-7 paired); halves form, [k even, even, odd, odd] (even lanes, then odd
          ;; ones, paired); then i16 lanes alternating even, odd, times -12.
          (local.set $sums (i32x4.extadd_pairwise_i16x8_s (local.get $all)))
          (local.set $sums (i32x4.add (local.get $sums)
            (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $sums) (local.get $sums))))
          (v128.store offset=32 (local.get $q) (i16x8.mul (v128.const i16x8 -12 -12 -12 -12 -12 -12 -12 -12)
            (i8x16.shuffle 0 1 8 9 0 1 8 9 0 1 8 9 0 1 8 9 (local.get $sums) (local.get $sums))))
          (local.set $sums (i32x4.extadd_pairwise_i16x8_s
            (i8x16.shuffle 0 1 4 5 8 9 12 13 2 3 6 7 10 11 14 15 (local.get $all) (local.get $all))))
          (local.set $sums (i32x4.add (local.get $sums)
            (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $sums) (local.get $sums))))
          (v128.store offset=32 (local.get $h) (i16x8.mul (v128.const i16x8 -12 -12 -12 -12 -12 -12 -12 -12)
            (i8x16.shuffle 0 1 8 9 0 1 8 9 0 1 8 9 0 1 8 9 (local.get $sums) (local.get $sums))))
          ;; As i8, k 0-15 and 16-31: split into even and odd k (OCP form), or each in halves order.
          (local.set $lo (i8x16.narrow_i16x8_s (local.get $v0) (local.get $v1)))
          (local.set $hi (i8x16.narrow_i16x8_s (local.get $v2) (local.get $v3)))
          (v128.store offset=0 (local.get $q)
            (i8x16.shuffle 0 2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 (local.get $lo) (local.get $hi)))
          (v128.store offset=16 (local.get $q)
            (i8x16.shuffle 1 3 5 7 9 11 13 15 17 19 21 23 25 27 29 31 (local.get $lo) (local.get $hi)))
          (v128.store offset=0 (local.get $h)
            (i8x16.shuffle 0 4 1 5 2 6 3 7 8 12 9 13 10 14 11 15 (local.get $lo) (local.get $lo)))
          (v128.store offset=16 (local.get $h)
            (i8x16.shuffle 0 4 1 5 2 6 3 7 8 12 9 13 10 14 11 15 (local.get $hi) (local.get $hi))))
        (else
          (v128.store offset=0 (local.get $q) (v128.const i64x2 0 0))
          (v128.store offset=16 (local.get $q) (v128.const i64x2 0 0))
          (v128.store offset=32 (local.get $q) (v128.const i64x2 0 0))
          (v128.store offset=0 (local.get $h) (v128.const i64x2 0 0))
          (v128.store offset=16 (local.get $h) (v128.const i64x2 0 0))
          (v128.store offset=32 (local.get $h) (v128.const i64x2 0 0))))
      (local.set $x (i32.add (local.get $x) (i32.const 128)))
      (local.set $q (i32.add (local.get $q) (i32.const 64)))
      (local.set $h (i32.add (local.get $h) (i32.const 64)))
      (br_if $blocks32 (i32.lt_u
        (local.tee $blk (i32.add (local.get $blk) (i32.const 1)))
        (local.get $count))))))
