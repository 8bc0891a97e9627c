;; The matmul's inner tiles (see ../matmul-kernel.ts): for g < G, m < M, j < 4,
;;
;;   f32 at byte o + m*ldo + 4*(4g + j) = Σ_k X[m][k] · W_g[j][k]
;;
;; the dot products of M input rows with G groups of four weight rows. x, w and o are byte offsets
;; into the imported shared memory (../wasm-arena.ts, which also holds the weights and the pool's
;; staged activations), K a multiple of 4 and ldo the output's row stride in bytes, so a tile
;; writes straight into a row-major [M, N] matrix. Group g's four rows take the 16K bytes from
;; w + 16gK, laid out as the tile reads them:
;; - tile(K, M, x, w, o, G, ldo): row-major rows, W_g[j][k] = w[(4g + j)*K + k], and row-major
;;   inputs X[m][k] = x[m*K + k] (chunks the MXFP4 and FP8 decoders write, weights outside row quads);
;; - quads(K, M, x, w, o, G, ldo, ahead, acc): rows in row quads (../../tensor/row-quads.ts),
;;   the four rows interleaved every 16 bytes, [r0 k0-3][r1 k0-3][r2 k0-3][r3 k0-3][r0 k4-7]...,
;;   and the inputs in pairs, as pairs(K, M, src, dst) writes them: rows 2i and 2i + 1 interleaved
;;   every 16 bytes, [x0 k0-3][x1 k0-3][x0 k4-7]..., an odd last row row-major after them. One
;;   pointer reads a group's rows and one a pair's inputs, at fixed offsets
;;   (bench/kernel-before-after.ts --kernel tile --before a revision without `quads` measures it
;;   against the one tile that read row quads with row and k strides from row-major inputs).
;;   `ahead` is where the thread's next weights lie (or -1) and `acc` 1 KiB of scratch for the
;;   k-blocked pairs (both described at the loops).
;; Both tiles do the same operations in the same order on each output, so the layouts change no bits.
;;
;; Each output keeps four f32 partial sums (lanes k mod 4) added as (l0 + l1) + (l2 + l3), so an
;; output depends only on its own row and input, never on M or on the other rows of the tile.
;; Inputs are taken two at a time (eight accumulators, each weight vector loaded once for both):
;; more accumulators (three inputs, or the k loop unrolled) measured slower, as V8 hoists the loads
;; and runs out of its sixteen vector registers.
;;
;; A group's four outputs for one input are summed together and stored as one vector: shuffles
;; gather lanes (0, 2) and (1, 3) of two accumulators, one add makes [l0 + l1, l2 + l3] of each,
;; and the same again over those gives each output's (l0 + l1) + (l2 + l3), the additions the
;; lanes were once extracted and added by one at a time (same bits, measured by
;; bench/kernel-before-after.ts --kernel tile). It is written out where it is stored, not called:
;; V8 does not inline WebAssembly calls here, and a call per output cost a measured share of the
;; tile at small K.
;;
;; Each step acc + x·w is f32x4.relaxed_madd (one rounding where the CPU has FMA, which V8 uses in
;; every tier). The build also writes an unfused variant, where every relaxed_madd becomes f32x4.mul
;; then f32x4.add (two roundings), for runtimes without relaxed SIMD (scripts/build-kernels.mjs).
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "tile")
    (param $K i32) (param $M i32) (param $x i32) (param $w0 i32) (param $o i32) (param $G i32) (param $ldo i32)
    (local $rowBytes i32) (local $g i32) (local $m i32) (local $xa i32) (local $xb i32)
    (local $w1 i32) (local $w2 i32) (local $w3 i32)
    (local $p0 i32) (local $p1 i32) (local $p2 i32) (local $p3 i32)
    (local $xp i32) (local $xp2 i32) (local $op i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local $xv v128) (local $xv2 v128) (local $wv v128)
    (local.set $rowBytes (i32.shl (local.get $K) (i32.const 2)))
    (if (i32.eqz (local.get $G)) (then (return)))
    ;; Four weight rows (four output columns) per group.
    (loop $groups
      (local.set $w1 (i32.add (local.get $w0) (local.get $rowBytes)))
      (local.set $w2 (i32.add (local.get $w1) (local.get $rowBytes)))
      (local.set $w3 (i32.add (local.get $w2) (local.get $rowBytes)))
      (local.set $m (i32.const 0))
      (local.set $xp (local.get $x))
      (local.set $op (local.get $o))
      ;; Input rows two at a time: each weight vector loaded once feeds eight independent
      ;; accumulators. Every output sees the same operations in the same order as in the one-row
      ;; block below, so its bits do not depend on whether it was paired.
      (block $pairsDone
        (loop $pairs
          (br_if $pairsDone (i32.ge_u (i32.add (local.get $m) (i32.const 1)) (local.get $M)))
          (local.set $a0 (v128.const i64x2 0 0))
          (local.set $a1 (v128.const i64x2 0 0))
          (local.set $a2 (v128.const i64x2 0 0))
          (local.set $a3 (v128.const i64x2 0 0))
          (local.set $b0 (v128.const i64x2 0 0))
          (local.set $b1 (v128.const i64x2 0 0))
          (local.set $b2 (v128.const i64x2 0 0))
          (local.set $b3 (v128.const i64x2 0 0))
          (local.set $p0 (local.get $w0))
          (local.set $p1 (local.get $w1))
          (local.set $p2 (local.get $w2))
          (local.set $p3 (local.get $w3))
          (local.set $xp2 (i32.add (local.get $xp) (local.get $rowBytes)))
          (local.set $xa (local.get $xp))
          (local.set $xb (local.get $xp2))
          (loop $k
            (local.set $xv (v128.load (local.get $xa)))
            (local.set $xv2 (v128.load (local.get $xb)))
            (local.set $wv (v128.load (local.get $p0)))
            (local.set $a0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a0)))
            (local.set $b0 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b0)))
            (local.set $wv (v128.load (local.get $p1)))
            (local.set $a1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a1)))
            (local.set $b1 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b1)))
            (local.set $wv (v128.load (local.get $p2)))
            (local.set $a2 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a2)))
            (local.set $b2 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b2)))
            (local.set $wv (v128.load (local.get $p3)))
            (local.set $a3 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a3)))
            (local.set $b3 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b3)))
            (local.set $p0 (i32.add (local.get $p0) (i32.const 16)))
            (local.set $p1 (i32.add (local.get $p1) (i32.const 16)))
            (local.set $p2 (i32.add (local.get $p2) (i32.const 16)))
            (local.set $p3 (i32.add (local.get $p3) (i32.const 16)))
            (local.set $xb (i32.add (local.get $xb) (i32.const 16)))
            (br_if $k (i32.lt_u
              (local.tee $xa (i32.add (local.get $xa) (i32.const 16)))
              (local.get $xp2))))
          (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a0) (local.get $a1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a0) (local.get $a1))))
          (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a2) (local.get $a3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a2) (local.get $a3))))
          (v128.store (local.get $op) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))
          (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b0) (local.get $b1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b0) (local.get $b1))))
          (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b2) (local.get $b3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b2) (local.get $b3))))
          (v128.store (i32.add (local.get $op) (local.get $ldo)) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))
          (local.set $xp (i32.add (local.get $xp2) (local.get $rowBytes)))
          (local.set $op (i32.add (local.get $op) (i32.shl (local.get $ldo) (i32.const 1))))
          (local.set $m (i32.add (local.get $m) (i32.const 2)))
          (br $pairs)))
      ;; After the pairs at most one input row is left.
      (if (i32.lt_u (local.get $m) (local.get $M))
        (then
          (local.set $a0 (v128.const i64x2 0 0))
          (local.set $a1 (v128.const i64x2 0 0))
          (local.set $a2 (v128.const i64x2 0 0))
          (local.set $a3 (v128.const i64x2 0 0))
          (local.set $p0 (local.get $w0))
          (local.set $p1 (local.get $w1))
          (local.set $p2 (local.get $w2))
          (local.set $p3 (local.get $w3))
          (local.set $xa (local.get $xp))
          (local.set $xp2 (i32.add (local.get $xp) (local.get $rowBytes)))
          (loop $k
            (local.set $xv (v128.load (local.get $xa)))
            (local.set $wv (v128.load (local.get $p0)))
            (local.set $a0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a0)))
            (local.set $wv (v128.load (local.get $p1)))
            (local.set $a1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a1)))
            (local.set $wv (v128.load (local.get $p2)))
            (local.set $a2 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a2)))
            (local.set $wv (v128.load (local.get $p3)))
            (local.set $a3 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a3)))
            (local.set $p0 (i32.add (local.get $p0) (i32.const 16)))
            (local.set $p1 (i32.add (local.get $p1) (i32.const 16)))
            (local.set $p2 (i32.add (local.get $p2) (i32.const 16)))
            (local.set $p3 (i32.add (local.get $p3) (i32.const 16)))
            (br_if $k (i32.lt_u
              (local.tee $xa (i32.add (local.get $xa) (i32.const 16)))
              (local.get $xp2))))
          (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a0) (local.get $a1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a0) (local.get $a1))))
          (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a2) (local.get $a3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a2) (local.get $a3))))
          (v128.store (local.get $op) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))))
      (local.set $w0 (i32.add (local.get $w0) (i32.shl (local.get $rowBytes) (i32.const 2))))
      (local.set $o (i32.add (local.get $o) (i32.const 16)))
      (br_if $groups (i32.lt_u
        (local.tee $g (i32.add (local.get $g) (i32.const 1)))
        (local.get $G)))))

  ;; Weights in row quads, inputs in pairs (see the top): each group's four rows are one stream read
  ;; at fixed offsets from one pointer, and each pair of inputs another, so the k loop steps two
  ;; pointers and does no other address arithmetic. A pair of inputs runs over all G groups before
  ;; the next pair: the call's weights stream from memory once, for the first pair, and lie in L2
  ;; for the others, while the pair stays in L1. The first pass (the first pair, or the one row
  ;; when M = 1) takes two groups at a time, two streams: one thread reading one stream of v128
  ;; loads measured 8.0-8.5 GB/s here, two 9.4-10.0, four or more about 10.4 (a scratch test).
  ;; On that first pass each group first reads one byte of each 4 KiB page the group six on starts
  ;; (the next call's weights where they lie past this call's, or whatever follows, read and
  ;; dropped; never past the memory's end). The L2 prefetchers follow a stream only within a page,
  ;; and each page's first access walks the page tables, so a stream from memory stalls at every
  ;; page boundary; these loads take those misses ahead of the stream, a group's together. (Written
  ;; out in each first-pass loop: as a called function the M = 1 case ran 0.91x, not faster, as V8
  ;; compiled the loop around the call worse.)
  ;; One thread, weights streamed from memory, against none (bench/kernel-before-after.ts --kernel
  ;; tile, two runs): [131072, 768] M = 1 1.27x and 1.13x, M = 4 1.21x and 1.08x, M = 16 1.07x and
  ;; 1.02x; [32768, 2304] M = 1 1.12x, M = 16 none shown; weights in L2 0.97-1.00x. Decode at one
  ;; stream on one thread (bench-100m) 1.08x [1.01, 1.16]; on two threads, which share the
  ;; memory's bandwidth, no difference shown.
  (func (export "quads")
    (param $K i32) (param $M i32) (param $x i32) (param $w i32) (param $o i32) (param $G i32) (param $ldo i32) (param $ahead i32) (param $acc i32)
    (local $steps i32) (local $s0 i32) (local $s1 i32) (local $blockPairs i32) (local $pair i32) (local $accAt i32)
    (local $rowBytes i32) (local $groupBytes i32) (local $g i32) (local $m i32) (local $p i32) (local $pg i32)
    (local $xa i32) (local $xp i32) (local $xe i32) (local $op i32) (local $o0 i32) (local $q i32) (local $half i32) (local $second i32) (local $t i32) (local $tEnd i32) (local $memPages i32) (local $aheadAt i32) (local $aheadStep i32) (local $aheadEnd i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local $xv v128) (local $xv2 v128) (local $wv v128)
    (local.set $rowBytes (i32.shl (local.get $K) (i32.const 2)))
    (local.set $groupBytes (i32.shl (local.get $rowBytes) (i32.const 2)))
    (if (i32.eqz (local.get $G)) (then (return)))
    (local.set $memPages (memory.size))
    (local.set $xp (local.get $x))
    (local.set $o0 (local.get $o))
    ;; The first pair reads the weights from memory, so it takes two groups at a time (two
    ;; streams, as the one-row loop below does): in two sweeps over them, rows 0 and 1 of both, then
    ;; rows 2 and 3 (32 bytes on in each 64, from L1), each sweep eight accumulators. An output's
    ;; two row sums from the first sweep wait in the output until the second's join them, with the
    ;; additions the other loops make: every output sees the operations of the one-row block below,
    ;; in its order. A last group alone runs with itself as the second group, whose sums are dropped.
    ;; Against one group at a time (bench/kernel-before-after.ts --kernel tile, one thread): weights
    ;; past the caches M = 16 1.06x and 1.20x ([131072, 768], [32768, 2304]), M = 4 1.11x; weights
    ;; in L3 M = 16 0.97x, M = 4 0.88x and 0.92x (its first sweep draws two lines from L3 for each
    ;; one the second reads from L1: where the weights fit L3, small batches lose that).
    ;; From twelve inputs, the first eight pairs (at most) are k-blocked instead: for each group,
    ;; eight k steps (512 bytes of its weights) at a time for every one of those pairs, their eight
    ;; accumulators each waiting in `acc` (1 KiB: pair i's at acc + 128i, stored and reloaded
    ;; whole, so no bits change) between blocks. The first pair's pass (below, for fewer inputs)
    ;; reads a chunk from memory while only two inputs compute, and the other pairs then compute
    ;; while the memory idles; here the weights arrive 512 bytes at a time between stretches of
    ;; every pair's multiply-adds, which keeps the L2 streamer ahead of them, so the memory time
    ;; hides under the compute. Two threads, 64 rows, K = 768, against the first pair's pass with
    ;; its read ahead (a scratch test, medians of 15): M = 12 1.08x, 14 1.08x, 16 1.11x, 32 1.08x;
    ;; M = 10 1.00x, so not below 12; all the pairs of M = 64 k-blocked 0.94x (each block's inputs
    ;; come from L2 there), so the pairs past eight run the loop below. Blocks of four k steps
    ;; measured 0.87x of eight, twelve 0.97-0.99x; touching the pages two to six groups on, as the
    ;; first pass does, no gain. One thread (bench/kernel-before-after.ts --kernel tile), M = 16:
    ;; past the caches 1.07x [1.05, 1.08] and 1.17x [1.16, 1.18] ([131072, 768], [32768, 2304]),
    ;; in L3 1.03x [0.98, 1.09] and 1.14x [1.12, 1.16]. bench-100m, 16 streams on two threads
    ;; (bench/engine-before-after.ts): decode 1.086x [1.060, 1.113].
    (if (i32.ge_u (local.get $M) (i32.const 12))
      (then
        (local.set $steps (i32.shr_u (local.get $K) (i32.const 2)))
        (local.set $blockPairs (select (i32.const 8) (local.tee $t (i32.shr_u (local.get $M) (i32.const 1)))
          (i32.gt_u (local.get $t) (i32.const 8))))
        (local.set $pg (local.get $w))
        (local.set $g (i32.const 0))
        (loop $blockGroups
          (local.set $s0 (i32.const 0))
          (loop $blocks
            (local.set $s1 (select (local.get $steps) (local.tee $t (i32.add (local.get $s0) (i32.const 8)))
              (i32.gt_u (local.get $t) (local.get $steps))))
            (local.set $pair (i32.const 0))
            (loop $blockPairsLoop
              (local.set $accAt (i32.add (local.get $acc) (i32.shl (local.get $pair) (i32.const 7))))
              (if (i32.eqz (local.get $s0))
                (then
                  (local.set $a0 (v128.const i64x2 0 0))
                  (local.set $a1 (v128.const i64x2 0 0))
                  (local.set $a2 (v128.const i64x2 0 0))
                  (local.set $a3 (v128.const i64x2 0 0))
                  (local.set $b0 (v128.const i64x2 0 0))
                  (local.set $b1 (v128.const i64x2 0 0))
                  (local.set $b2 (v128.const i64x2 0 0))
                  (local.set $b3 (v128.const i64x2 0 0)))
                (else
                  (local.set $a0 (v128.load offset=0 (local.get $accAt)))
                  (local.set $a1 (v128.load offset=16 (local.get $accAt)))
                  (local.set $a2 (v128.load offset=32 (local.get $accAt)))
                  (local.set $a3 (v128.load offset=48 (local.get $accAt)))
                  (local.set $b0 (v128.load offset=64 (local.get $accAt)))
                  (local.set $b1 (v128.load offset=80 (local.get $accAt)))
                  (local.set $b2 (v128.load offset=96 (local.get $accAt)))
                  (local.set $b3 (v128.load offset=112 (local.get $accAt)))))
              ;; Pair i's inputs start 2i rows into x; step s is 64 bytes into a group, 32 into a pair.
              (local.set $p (i32.add (local.get $pg) (i32.shl (local.get $s0) (i32.const 6))))
              (local.set $xa (i32.add
                (i32.add (local.get $x) (i32.mul (local.get $pair) (i32.shl (local.get $rowBytes) (i32.const 1))))
                (i32.shl (local.get $s0) (i32.const 5))))
              (local.set $xe (i32.add (local.get $xa) (i32.shl (i32.sub (local.get $s1) (local.get $s0)) (i32.const 5))))
              (loop $k
                (local.set $xv (v128.load (local.get $xa)))
                (local.set $xv2 (v128.load offset=16 (local.get $xa)))
                (local.set $wv (v128.load (local.get $p)))
                (local.set $a0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a0)))
                (local.set $b0 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b0)))
                (local.set $wv (v128.load offset=16 (local.get $p)))
                (local.set $a1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a1)))
                (local.set $b1 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b1)))
                (local.set $wv (v128.load offset=32 (local.get $p)))
                (local.set $a2 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a2)))
                (local.set $b2 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b2)))
                (local.set $wv (v128.load offset=48 (local.get $p)))
                (local.set $a3 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a3)))
                (local.set $b3 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b3)))
                (local.set $p (i32.add (local.get $p) (i32.const 64)))
                (br_if $k (i32.lt_u
                  (local.tee $xa (i32.add (local.get $xa) (i32.const 32)))
                  (local.get $xe))))
              (if (i32.lt_u (local.get $s1) (local.get $steps))
                (then
                  (v128.store offset=0 (local.get $accAt) (local.get $a0))
                  (v128.store offset=16 (local.get $accAt) (local.get $a1))
                  (v128.store offset=32 (local.get $accAt) (local.get $a2))
                  (v128.store offset=48 (local.get $accAt) (local.get $a3))
                  (v128.store offset=64 (local.get $accAt) (local.get $b0))
                  (v128.store offset=80 (local.get $accAt) (local.get $b1))
                  (v128.store offset=96 (local.get $accAt) (local.get $b2))
                  (v128.store offset=112 (local.get $accAt) (local.get $b3)))
                (else
                  ;; The last block: the pair's outputs for this group, as the loop below stores them.
                  (local.set $op (i32.add (i32.add (local.get $o0) (i32.shl (local.get $g) (i32.const 4)))
                    (i32.mul (local.get $pair) (i32.shl (local.get $ldo) (i32.const 1)))))
                  (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a0) (local.get $a1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a0) (local.get $a1))))
                  (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a2) (local.get $a3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a2) (local.get $a3))))
                  (v128.store (local.get $op) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))
                  (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b0) (local.get $b1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b0) (local.get $b1))))
                  (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b2) (local.get $b3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b2) (local.get $b3))))
                  (v128.store (i32.add (local.get $op) (local.get $ldo)) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))))
              (br_if $blockPairsLoop (i32.lt_u
                (local.tee $pair (i32.add (local.get $pair) (i32.const 1)))
                (local.get $blockPairs))))
            (br_if $blocks (i32.lt_u (local.tee $s0 (local.get $s1)) (local.get $steps))))
          (local.set $pg (i32.add (local.get $pg) (local.get $groupBytes)))
          (br_if $blockGroups (i32.lt_u
            (local.tee $g (i32.add (local.get $g) (i32.const 1)))
            (local.get $G))))
        (local.set $m (i32.shl (local.get $blockPairs) (i32.const 1)))
        (local.set $xp (i32.add (local.get $xp) (i32.mul (local.get $m) (local.get $rowBytes))))
        (local.set $o0 (i32.add (local.get $o0) (i32.mul (local.get $m) (local.get $ldo)))))
      (else
    (if (i32.ge_u (local.get $M) (i32.const 2))
      (then
        (local.set $xe (i32.add (local.get $xp) (i32.shl (local.get $rowBytes) (i32.const 1))))
        (local.set $pg (local.get $w))
        (local.set $op (local.get $o0))
        (local.set $g (i32.const 0))
        (loop $firstGroups
          ;; Touch the pages of the two groups six on (see the top).
          (local.set $t (i32.add (local.get $pg) (i32.mul (local.get $groupBytes) (i32.const 6))))
          (local.set $tEnd (i32.add (local.get $t) (i32.shl (local.get $groupBytes) (i32.const 1))))
          (local.set $t (i32.and (i32.add (local.get $t) (i32.const 4095)) (i32.const -4096)))
          (block $touched
            (loop $pages
              (br_if $touched (i32.ge_u (local.get $t) (local.get $tEnd)))
              (br_if $touched (i32.ge_u (i32.shr_u (local.get $t) (i32.const 16)) (local.get $memPages)))
              (drop (i32.load8_u (local.get $t)))
              (local.set $t (i32.add (local.get $t) (i32.const 4096)))
              (br $pages)))
          (local.set $second (i32.lt_u (i32.add (local.get $g) (i32.const 1)) (local.get $G)))
          (local.set $half (i32.const 0))
          (loop $halves
            (local.set $a0 (v128.const i64x2 0 0))
            (local.set $a1 (v128.const i64x2 0 0))
            (local.set $a2 (v128.const i64x2 0 0))
            (local.set $a3 (v128.const i64x2 0 0))
            (local.set $b0 (v128.const i64x2 0 0))
            (local.set $b1 (v128.const i64x2 0 0))
            (local.set $b2 (v128.const i64x2 0 0))
            (local.set $b3 (v128.const i64x2 0 0))
            (local.set $p (i32.add (local.get $pg) (local.get $half)))
            (local.set $q (select (i32.add (local.get $p) (local.get $groupBytes)) (local.get $p) (local.get $second)))
            (local.set $xa (local.get $xp))
            (loop $k
              (local.set $xv (v128.load (local.get $xa)))
              (local.set $xv2 (v128.load offset=16 (local.get $xa)))
              (local.set $wv (v128.load (local.get $p)))
              (local.set $a0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a0)))
              (local.set $a2 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $a2)))
              (local.set $wv (v128.load offset=16 (local.get $p)))
              (local.set $a1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a1)))
              (local.set $a3 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $a3)))
              (local.set $wv (v128.load (local.get $q)))
              (local.set $b0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $b0)))
              (local.set $b2 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b2)))
              (local.set $wv (v128.load offset=16 (local.get $q)))
              (local.set $b1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $b1)))
              (local.set $b3 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b3)))
              (local.set $p (i32.add (local.get $p) (i32.const 64)))
              (local.set $q (i32.add (local.get $q) (i32.const 64)))
              (br_if $k (i32.lt_u
                (local.tee $xa (i32.add (local.get $xa) (i32.const 32)))
                (local.get $xe))))
            ;; Each input's [row r (l0 + l1), (l2 + l3), row r + 1 (l0 + l1), (l2 + l3)] per group.
            (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a0) (local.get $a1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a0) (local.get $a1))))
            (if (i32.eqz (local.get $half))
              (then (v128.store (local.get $op) (local.get $xv)))
              (else
                (local.set $xv2 (v128.load (local.get $op)))
                (v128.store (local.get $op) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv2) (local.get $xv)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv2) (local.get $xv))))))
            (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a2) (local.get $a3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a2) (local.get $a3))))
            (if (i32.eqz (local.get $half))
              (then (v128.store (i32.add (local.get $op) (local.get $ldo)) (local.get $xv)))
              (else
                (local.set $xv2 (v128.load (i32.add (local.get $op) (local.get $ldo))))
                (v128.store (i32.add (local.get $op) (local.get $ldo)) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv2) (local.get $xv)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv2) (local.get $xv))))))
            (if (local.get $second)
              (then
                (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b0) (local.get $b1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b0) (local.get $b1))))
                (if (i32.eqz (local.get $half))
                  (then (v128.store (i32.add (local.get $op) (i32.const 16)) (local.get $xv)))
                  (else
                    (local.set $xv2 (v128.load (i32.add (local.get $op) (i32.const 16))))
                    (v128.store (i32.add (local.get $op) (i32.const 16)) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv2) (local.get $xv)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv2) (local.get $xv))))))
                (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b2) (local.get $b3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b2) (local.get $b3))))
                (if (i32.eqz (local.get $half))
                  (then (v128.store (i32.add (i32.add (local.get $op) (local.get $ldo)) (i32.const 16)) (local.get $xv)))
                  (else
                    (local.set $xv2 (v128.load (i32.add (i32.add (local.get $op) (local.get $ldo)) (i32.const 16))))
                    (v128.store (i32.add (i32.add (local.get $op) (local.get $ldo)) (i32.const 16)) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv2) (local.get $xv)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv2) (local.get $xv))))))))
            ;; Rows 2 and 3 lie 32 bytes into each 64 of a group.
            (br_if $halves (local.tee $half (i32.xor (local.get $half) (i32.const 32)))))
          (local.set $pg (i32.add (local.get $pg) (i32.shl (local.get $groupBytes) (i32.const 1))))
          (local.set $op (i32.add (local.get $op) (i32.const 32)))
          (br_if $firstGroups (i32.lt_u
            (local.tee $g (i32.add (local.get $g) (i32.const 2)))
            (local.get $G))))
        (local.set $xp (local.get $xe))
        (local.set $o0 (i32.add (local.get $o0) (i32.shl (local.get $ldo) (i32.const 1))))
        (local.set $m (i32.const 2))))))
    ;; The other pairs, whose weights lie in L2 by then: each weight vector loaded once feeds eight
    ;; independent accumulators, as in `tile`, and every output sees the operations of the one-row
    ;; block below, in its order.
    ;; While they compute, they read ahead: one byte of the weights the thread reads next (`ahead`,
    ;; the next call's, or -1: none) each step of the k loop, at a pace that covers the first half of
    ;; this call's bytes from there over all the later pairs (32 / their count bytes a step, at
    ;; least 1), and never past the memory's end. WebAssembly has no prefetch: these loads bring the
    ;; next call's first lines from memory, and set the L2 streamer on its pages, while this call's
    ;; multiply-adds run, where the first pair would otherwise wait for them. With fewer than three
    ;; later pairs (M < 8 after the first pair, M < 22 after eight k-blocked ones) there is too
    ;; little compute to hide them: the step is 0 and the load reads one byte of this call's own
    ;; weights. Two threads, each touching its own next chunk, 64 rows,
    ;; K = 768 (a scratch test, medians of 15): M = 16 1.11x, M = 10 1.10x, M = 8 1.12x, M = 6
    ;; 0.98x, M = 4 0.92x; half the bytes measured faster than all of them (M = 8 1.16x). Against
    ;; none (bench/engine-before-after.ts, 16 streams, 2 threads): bench-100m decode 1.052x [1.009,
    ;; 1.097]; `medium`, whose weights fit L3, 1.050x [0.979, 1.126]; one stream no difference shown.
    (local.set $aheadAt (local.get $w))
    (local.set $aheadEnd (i32.sub (i32.shl (local.get $memPages) (i32.const 16)) (i32.const 1)))
    (if (i32.and (i32.ge_u (local.tee $t (i32.shr_u (i32.sub (local.get $M) (local.get $m)) (i32.const 1))) (i32.const 3))
          (i32.lt_u (local.get $ahead) (local.get $aheadEnd)))
      (then
        (local.set $aheadAt (local.get $ahead))
        (local.set $aheadStep (select
          (local.tee $aheadStep (i32.div_u (i32.const 32) (local.get $t)))
          (i32.const 1)
          (local.get $aheadStep)))
        ;; The last byte read: the first half of this call's bytes on, or the memory's last.
        (local.set $aheadEnd (i32.add (local.get $ahead) (select
          (local.tee $t (i32.shr_u (i32.mul (local.get $groupBytes) (local.get $G)) (i32.const 1)))
          (local.tee $tEnd (i32.sub (local.get $aheadEnd) (local.get $ahead)))
          (i32.lt_u (local.get $t) (local.get $tEnd)))))))
    (block $pairsDone
      (loop $pairs
        (br_if $pairsDone (i32.ge_u (i32.add (local.get $m) (i32.const 1)) (local.get $M)))
        (local.set $xe (i32.add (local.get $xp) (i32.shl (local.get $rowBytes) (i32.const 1))))
        (local.set $pg (local.get $w))
        (local.set $op (local.get $o0))
        (local.set $g (i32.const 0))
        (loop $groups
          (local.set $a0 (v128.const i64x2 0 0))
          (local.set $a1 (v128.const i64x2 0 0))
          (local.set $a2 (v128.const i64x2 0 0))
          (local.set $a3 (v128.const i64x2 0 0))
          (local.set $b0 (v128.const i64x2 0 0))
          (local.set $b1 (v128.const i64x2 0 0))
          (local.set $b2 (v128.const i64x2 0 0))
          (local.set $b3 (v128.const i64x2 0 0))
          (local.set $p (local.get $pg))
          (local.set $xa (local.get $xp))
          ;; A group's K / 4 steps would take the read ahead past its end: it stops where it is.
          (if (i32.gt_u (i32.add (local.get $aheadAt) (i32.mul (local.get $aheadStep) (i32.shr_u (local.get $K) (i32.const 2))))
                (local.get $aheadEnd))
            (then (local.set $aheadStep (i32.const 0))))
          (loop $k
            (local.set $xv (v128.load (local.get $xa)))
            (local.set $xv2 (v128.load offset=16 (local.get $xa)))
            (local.set $wv (v128.load (local.get $p)))
            (local.set $a0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a0)))
            (local.set $b0 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b0)))
            (local.set $wv (v128.load offset=16 (local.get $p)))
            (local.set $a1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a1)))
            (local.set $b1 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b1)))
            (local.set $wv (v128.load offset=32 (local.get $p)))
            (local.set $a2 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a2)))
            (local.set $b2 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b2)))
            (local.set $wv (v128.load offset=48 (local.get $p)))
            (local.set $a3 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a3)))
            (local.set $b3 (f32x4.relaxed_madd (local.get $xv2) (local.get $wv) (local.get $b3)))
            (drop (i32.load8_u (local.get $aheadAt)))
            (local.set $aheadAt (i32.add (local.get $aheadAt) (local.get $aheadStep)))
            (local.set $p (i32.add (local.get $p) (i32.const 64)))
            (br_if $k (i32.lt_u
              (local.tee $xa (i32.add (local.get $xa) (i32.const 32)))
              (local.get $xe))))
          (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a0) (local.get $a1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a0) (local.get $a1))))
          (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a2) (local.get $a3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a2) (local.get $a3))))
          (v128.store (local.get $op) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))
          (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b0) (local.get $b1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b0) (local.get $b1))))
          (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b2) (local.get $b3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b2) (local.get $b3))))
          (v128.store (i32.add (local.get $op) (local.get $ldo)) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))
          (local.set $pg (i32.add (local.get $pg) (local.get $groupBytes)))
          (local.set $op (i32.add (local.get $op) (i32.const 16)))
          (br_if $groups (i32.lt_u
            (local.tee $g (i32.add (local.get $g) (i32.const 1)))
            (local.get $G))))
        (local.set $xp (local.get $xe))
        (local.set $o0 (i32.add (local.get $o0) (i32.shl (local.get $ldo) (i32.const 1))))
        (local.set $m (i32.add (local.get $m) (i32.const 2)))
        (br $pairs)))
    ;; After the pairs at most one input row is left, row-major. It takes two groups at a time,
    ;; eight accumulators as a pair's loop has, and two streams of weights, where one group (four
    ;; accumulators, one stream) left its multiply-adds waiting on each other and its loads on one
    ;; stream's misses; a last group alone is taken with itself as the second, whose sums are dropped.
    ;; M = 1 past the caches 1.14x and 1.15x, in L3 1.03x and 1.09x (as the first pair's figures).
    (if (i32.lt_u (local.get $m) (local.get $M))
      (then
        (local.set $xe (i32.add (local.get $xp) (local.get $rowBytes)))
        (local.set $pg (local.get $w))
        (local.set $op (local.get $o0))
        (local.set $g (i32.const 0))
        (loop $groups
          ;; First pass over the weights (here the one row left is row 0 only when M = 1): touch
          ;; the pages of the two groups six on (see the top).
          (if (i32.eqz (local.get $m))
            (then
              (local.set $t (i32.add (local.get $pg) (i32.mul (local.get $groupBytes) (i32.const 6))))
              (local.set $tEnd (i32.add (local.get $t) (i32.shl (local.get $groupBytes) (i32.const 1))))
              (local.set $t (i32.and (i32.add (local.get $t) (i32.const 4095)) (i32.const -4096)))
              (block $touched
                (loop $pages
                  (br_if $touched (i32.ge_u (local.get $t) (local.get $tEnd)))
                  (br_if $touched (i32.ge_u (i32.shr_u (local.get $t) (i32.const 16)) (local.get $memPages)))
                  (drop (i32.load8_u (local.get $t)))
                  (local.set $t (i32.add (local.get $t) (i32.const 4096)))
                  (br $pages)))))
          (local.set $a0 (v128.const i64x2 0 0))
          (local.set $a1 (v128.const i64x2 0 0))
          (local.set $a2 (v128.const i64x2 0 0))
          (local.set $a3 (v128.const i64x2 0 0))
          (local.set $b0 (v128.const i64x2 0 0))
          (local.set $b1 (v128.const i64x2 0 0))
          (local.set $b2 (v128.const i64x2 0 0))
          (local.set $b3 (v128.const i64x2 0 0))
          (local.set $second (i32.lt_u (i32.add (local.get $g) (i32.const 1)) (local.get $G)))
          (local.set $p (local.get $pg))
          (local.set $q (select (i32.add (local.get $pg) (local.get $groupBytes)) (local.get $pg) (local.get $second)))
          (local.set $xa (local.get $xp))
          (loop $k
            (local.set $xv (v128.load (local.get $xa)))
            (local.set $wv (v128.load (local.get $p)))
            (local.set $a0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a0)))
            (local.set $wv (v128.load (local.get $q)))
            (local.set $b0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $b0)))
            (local.set $wv (v128.load offset=16 (local.get $p)))
            (local.set $a1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a1)))
            (local.set $wv (v128.load offset=16 (local.get $q)))
            (local.set $b1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $b1)))
            (local.set $wv (v128.load offset=32 (local.get $p)))
            (local.set $a2 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a2)))
            (local.set $wv (v128.load offset=32 (local.get $q)))
            (local.set $b2 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $b2)))
            (local.set $wv (v128.load offset=48 (local.get $p)))
            (local.set $a3 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a3)))
            (local.set $wv (v128.load offset=48 (local.get $q)))
            (local.set $b3 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $b3)))
            (local.set $p (i32.add (local.get $p) (i32.const 64)))
            (local.set $q (i32.add (local.get $q) (i32.const 64)))
            (br_if $k (i32.lt_u
              (local.tee $xa (i32.add (local.get $xa) (i32.const 16)))
              (local.get $xe))))
          (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a0) (local.get $a1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a0) (local.get $a1))))
          (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a2) (local.get $a3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a2) (local.get $a3))))
          (v128.store (local.get $op) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))
          (if (local.get $second)
            (then
              (local.set $xv (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b0) (local.get $b1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b0) (local.get $b1))))
              (local.set $xv2 (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $b2) (local.get $b3)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $b2) (local.get $b3))))
              (v128.store offset=16 (local.get $op) (f32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $xv) (local.get $xv2)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $xv) (local.get $xv2))))))
          (local.set $pg (i32.add (local.get $pg) (i32.shl (local.get $groupBytes) (i32.const 1))))
          (local.set $op (i32.add (local.get $op) (i32.const 32)))
          (br_if $groups (i32.lt_u
            (local.tee $g (i32.add (local.get $g) (i32.const 2)))
            (local.get $G)))))))

  ;; The M row-major rows [M, K] at src in pairs at dst (another place): each pair of rows
  ;; interleaved every four floats, an odd last row as it is.
  (func (export "pairs") (param $K i32) (param $M i32) (param $src i32) (param $dst i32)
    (local $rowBytes i32) (local $s i32) (local $e i32) (local $d i32) (local $m i32)
    (local.set $rowBytes (i32.shl (local.get $K) (i32.const 2)))
    (if (i32.eqz (local.get $K)) (then (return)))
    (block $pairsDone
      (loop $pairs
        (br_if $pairsDone (i32.ge_u (i32.add (local.get $m) (i32.const 1)) (local.get $M)))
        (local.set $s (i32.add (local.get $src) (i32.mul (local.get $m) (local.get $rowBytes))))
        (local.set $d (i32.add (local.get $dst) (i32.mul (local.get $m) (local.get $rowBytes))))
        (local.set $e (i32.add (local.get $s) (local.get $rowBytes)))
        (loop $k
          (v128.store (local.get $d) (v128.load (local.get $s)))
          (v128.store offset=16 (local.get $d) (v128.load (i32.add (local.get $s) (local.get $rowBytes))))
          (local.set $d (i32.add (local.get $d) (i32.const 32)))
          (br_if $k (i32.lt_u
            (local.tee $s (i32.add (local.get $s) (i32.const 16)))
            (local.get $e))))
        (local.set $m (i32.add (local.get $m) (i32.const 2)))
        (br $pairs)))
    (if (i32.lt_u (local.get $m) (local.get $M))
      (then
        (memory.copy
          (i32.add (local.get $dst) (i32.mul (local.get $m) (local.get $rowBytes)))
          (i32.add (local.get $src) (i32.mul (local.get $m) (local.get $rowBytes)))
          (local.get $rowBytes)))))
)
