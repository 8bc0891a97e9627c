;; The matmul tile's one-input-row block (matmul-tile.wat's `quads` at M = 1) reading its groups as
;; two streams: for G groups of four row-quads rows from byte w (each 16K bytes, K a multiple of 4),
;;
;;   f32 at byte o + 4*(4g + j) = Σ_k x[k] · W_g[j][k]
;;
;; groups [0, h) and [h, 2h) (h = G >> 1) taken in pairs g, g + h, one input vector loaded for
;; both, then an odd last group alone. Two streams a half apart read faster than one on this VM
;; (bench/wasm-read-bandwidth.ts: quads2far, far98k against quads1; two adjacent groups at once
;; read slower). Each output sees the tile's operations in its order: four f32 lanes of
;; multiply-adds over k, then (l0 + l1) + (l2 + l3), so the same bits as the tile at any M.
;; Each step is f32x4.relaxed_madd; the build also writes an unfused variant (mul then add), as
;; for the tile (scripts/build-kernels.mjs).
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func $group (param $K i32) (param $x i32) (param $w i32) (param $o i32)
    (local $xa i32) (local $xe i32) (local $p i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $xv v128) (local $wv v128)
    (local.set $p (local.get $w))
    (local.set $xa (local.get $x))
    (local.set $xe (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
    (loop $k
      (local.set $xv (v128.load (local.get $xa)))
      (local.set $wv (v128.load (local.get $p)))
      (local.set $a0 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a0)))
      (local.set $wv (v128.load offset=16 (local.get $p)))
      (local.set $a1 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a1)))
      (local.set $wv (v128.load offset=32 (local.get $p)))
      (local.set $a2 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a2)))
      (local.set $wv (v128.load offset=48 (local.get $p)))
      (local.set $a3 (f32x4.relaxed_madd (local.get $xv) (local.get $wv) (local.get $a3)))
      (local.set $p (i32.add (local.get $p) (i32.const 64)))
      (br_if $k (i32.lt_u
        (local.tee $xa (i32.add (local.get $xa) (i32.const 16)))
        (local.get $xe))))
    (f32.store offset=0 (local.get $o) (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
      (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
    (f32.store offset=4 (local.get $o) (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $a1)) (f32x4.extract_lane 1 (local.get $a1)))
      (f32.add (f32x4.extract_lane 2 (local.get $a1)) (f32x4.extract_lane 3 (local.get $a1)))))
    (f32.store offset=8 (local.get $o) (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $a2)) (f32x4.extract_lane 1 (local.get $a2)))
      (f32.add (f32x4.extract_lane 2 (local.get $a2)) (f32x4.extract_lane 3 (local.get $a2)))))
    (f32.store offset=12 (local.get $o) (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $a3)) (f32x4.extract_lane 1 (local.get $a3)))
      (f32.add (f32x4.extract_lane 2 (local.get $a3)) (f32x4.extract_lane 3 (local.get $a3))))))

  (func (export "rowHalves") (param $K i32) (param $x i32) (param $w i32) (param $o i32) (param $G i32)
    (local $groupBytes i32) (local $half i32) (local $far i32) (local $g i32) (local $p i32) (local $q i32)
    (local $xa i32) (local $xe i32) (local $op i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local $xv v128) (local $wv v128)
    (local.set $groupBytes (i32.shl (local.get $K) (i32.const 4)))
    (local.set $half (i32.shr_u (local.get $G) (i32.const 1)))
    (local.set $far (i32.mul (local.get $half) (local.get $groupBytes)))
    (local.set $xe (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
    (local.set $op (local.get $o))
    (block $pairsDone
      (loop $pairs
        (br_if $pairsDone (i32.ge_u (local.get $g) (local.get $half)))
        (local.set $a0 (v128.const i64x2 0 0))
        (local.set $a1 (v128.const i64x2 0 0))
        (local.set $a2 (v128.const i64x2 0 0))
        (local.set $a3 (v128.const i64x2 0 0))
        (local.set $b0 (v128.const i64x2 0 0))
        (local.set $b1 (v128.const i64x2 0 0))
        (local.set $b2 (v128.const i64x2 0 0))
        (local.set $b3 (v128.const i64x2 0 0))
        (local.set $p (local.get $w))
        (local.set $q (i32.add (local.get $w) (local.get $far)))
        (local.set $xa (local.get $x))
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
        ;; Group g + h's outputs lie 16h bytes on.
        (f32.store offset=0 (i32.add (local.get $op) (i32.shl (local.get $half) (i32.const 4))) (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $b0)) (f32x4.extract_lane 1 (local.get $b0)))
          (f32.add (f32x4.extract_lane 2 (local.get $b0)) (f32x4.extract_lane 3 (local.get $b0)))))
        (f32.store offset=4 (i32.add (local.get $op) (i32.shl (local.get $half) (i32.const 4))) (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $b1)) (f32x4.extract_lane 1 (local.get $b1)))
          (f32.add (f32x4.extract_lane 2 (local.get $b1)) (f32x4.extract_lane 3 (local.get $b1)))))
        (f32.store offset=8 (i32.add (local.get $op) (i32.shl (local.get $half) (i32.const 4))) (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $b2)) (f32x4.extract_lane 1 (local.get $b2)))
          (f32.add (f32x4.extract_lane 2 (local.get $b2)) (f32x4.extract_lane 3 (local.get $b2)))))
        (f32.store offset=12 (i32.add (local.get $op) (i32.shl (local.get $half) (i32.const 4))) (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $b3)) (f32x4.extract_lane 1 (local.get $b3)))
          (f32.add (f32x4.extract_lane 2 (local.get $b3)) (f32x4.extract_lane 3 (local.get $b3)))))
        (local.set $w (i32.add (local.get $w) (local.get $groupBytes)))
        (local.set $op (i32.add (local.get $op) (i32.const 16)))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $pairs)))
    ;; An odd G leaves group 2h, after both halves.
    (if (i32.and (local.get $G) (i32.const 1))
      (then
        (call $group (local.get $K) (local.get $x)
          (i32.add (local.get $w) (local.get $far))
          (i32.add (local.get $op) (i32.shl (local.get $half) (i32.const 4)))))))
)
