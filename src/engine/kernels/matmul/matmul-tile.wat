;; The matmul's inner tile (see ../matmul-kernel.ts):
;;
;;   tile(K, M, x, w, o, G, ldo, rowStride, kStride): for g < G, m < M, j < 4:
;;     f32 at byte o + m*ldo + 4*(4g + j) = Σ_k x[m*K + k] · W_g[j][k]
;;
;; x, w and o are byte offsets into the imported shared memory (../wasm-arena.ts, which also holds
;; the weights and the pool's staged activations), K a multiple of 4 and ldo the output's row stride
;; in bytes, so the tile writes straight into a row-major [M, N] matrix.
;;
;; Group g's four weight rows take the 16K bytes from w + 16gK, and the four values k..k+3 of row j
;; (k a multiple of 4) lie at byte w + 16gK + j*rowStride + (k/4)*kStride of them:
;; - row-major rows (rowStride 4K, kStride 16): W_g[j][k] = w[(4g + j)*K + k];
;; - four rows interleaved every 16 bytes (rowStride 16, kStride 64; ../../tensor/row-quads.ts),
;;   [r0 k0-3][r1 k0-3][r2 k0-3][r3 k0-3][r0 k4-7]..., which the tile reads as one sequential
;;   stream instead of four streams K floats apart: faster where the weights come from memory
;;   rather than the caches (bench/kernel-before-after.ts --kernel tile measures both).
;; Both read the same values in the same order, so the layout changes no bits. Each row's pointer
;; steps by kStride and the inputs' by 16, so the loop does no other address arithmetic.
;;
;; Each output keeps four f32 partial sums (lanes k mod 4) added as (l0 + l1) + (l2 + l3), so an
;; output depends only on its own row and input, never on M or on the other rows of the tile.
;;
;; Each output's (l0 + l1) + (l2 + l3) is written out where it is stored, not called: V8 does not
;; inline WebAssembly calls here, and a call per output cost a measured share of the tile at small K
;; (bench/kernel-before-after.ts --kernel tile).
;;
;; Each step acc + x·w is f32x4.relaxed_madd (one rounding where the CPU has FMA, which V8 uses in
;; every tier). The build also writes an unfused variant, where every relaxed_madd becomes f32x4.mul
;; then f32x4.add (two roundings), for runtimes without relaxed SIMD (scripts/build-kernels.mjs).
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "tile")
    (param $K i32) (param $M i32) (param $x i32) (param $w0 i32) (param $o i32) (param $G i32) (param $ldo i32)
    (param $rowStride i32) (param $kStride i32)
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
      (local.set $w1 (i32.add (local.get $w0) (local.get $rowStride)))
      (local.set $w2 (i32.add (local.get $w1) (local.get $rowStride)))
      (local.set $w3 (i32.add (local.get $w2) (local.get $rowStride)))
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
            (local.set $p0 (i32.add (local.get $p0) (local.get $kStride)))
            (local.set $p1 (i32.add (local.get $p1) (local.get $kStride)))
            (local.set $p2 (i32.add (local.get $p2) (local.get $kStride)))
            (local.set $p3 (i32.add (local.get $p3) (local.get $kStride)))
            (local.set $xb (i32.add (local.get $xb) (i32.const 16)))
            (br_if $k (i32.lt_u
              (local.tee $xa (i32.add (local.get $xa) (i32.const 16)))
              (local.get $xp2))))
          (f32.store offset=0 (local.get $op) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
            (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
          (f32.store offset=4 (local.get $op) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a1)) (f32x4.extract_lane 1 (local.get $a1)))
            (f32.add (f32x4.extract_lane 2 (local.get $a1)) (f32x4.extract_lane 3 (local.get $a1)))))
          (f32.store offset=8 (local.get $op) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a2)) (f32x4.extract_lane 1 (local.get $a2)))
            (f32.add (f32x4.extract_lane 2 (local.get $a2)) (f32x4.extract_lane 3 (local.get $a2)))))
          (f32.store offset=12 (local.get $op) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a3)) (f32x4.extract_lane 1 (local.get $a3)))
            (f32.add (f32x4.extract_lane 2 (local.get $a3)) (f32x4.extract_lane 3 (local.get $a3)))))
          (f32.store offset=0 (i32.add (local.get $op) (local.get $ldo)) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $b0)) (f32x4.extract_lane 1 (local.get $b0)))
            (f32.add (f32x4.extract_lane 2 (local.get $b0)) (f32x4.extract_lane 3 (local.get $b0)))))
          (f32.store offset=4 (i32.add (local.get $op) (local.get $ldo)) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $b1)) (f32x4.extract_lane 1 (local.get $b1)))
            (f32.add (f32x4.extract_lane 2 (local.get $b1)) (f32x4.extract_lane 3 (local.get $b1)))))
          (f32.store offset=8 (i32.add (local.get $op) (local.get $ldo)) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $b2)) (f32x4.extract_lane 1 (local.get $b2)))
            (f32.add (f32x4.extract_lane 2 (local.get $b2)) (f32x4.extract_lane 3 (local.get $b2)))))
          (f32.store offset=12 (i32.add (local.get $op) (local.get $ldo)) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $b3)) (f32x4.extract_lane 1 (local.get $b3)))
            (f32.add (f32x4.extract_lane 2 (local.get $b3)) (f32x4.extract_lane 3 (local.get $b3)))))
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
            (local.set $p0 (i32.add (local.get $p0) (local.get $kStride)))
            (local.set $p1 (i32.add (local.get $p1) (local.get $kStride)))
            (local.set $p2 (i32.add (local.get $p2) (local.get $kStride)))
            (local.set $p3 (i32.add (local.get $p3) (local.get $kStride)))
            (br_if $k (i32.lt_u
              (local.tee $xa (i32.add (local.get $xa) (i32.const 16)))
              (local.get $xp2))))
          (f32.store offset=0 (local.get $op) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
            (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
          (f32.store offset=4 (local.get $op) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a1)) (f32x4.extract_lane 1 (local.get $a1)))
            (f32.add (f32x4.extract_lane 2 (local.get $a1)) (f32x4.extract_lane 3 (local.get $a1)))))
          (f32.store offset=8 (local.get $op) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a2)) (f32x4.extract_lane 1 (local.get $a2)))
            (f32.add (f32x4.extract_lane 2 (local.get $a2)) (f32x4.extract_lane 3 (local.get $a2)))))
          (f32.store offset=12 (local.get $op) (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a3)) (f32x4.extract_lane 1 (local.get $a3)))
            (f32.add (f32x4.extract_lane 2 (local.get $a3)) (f32x4.extract_lane 3 (local.get $a3)))))))
      (local.set $w0 (i32.add (local.get $w0) (i32.shl (local.get $rowBytes) (i32.const 2))))
      (local.set $o (i32.add (local.get $o) (i32.const 16)))
      (br_if $groups (i32.lt_u
        (local.tee $g (i32.add (local.get $g) (i32.const 1)))
        (local.get $G))))))
