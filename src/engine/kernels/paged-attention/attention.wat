;; The inner loops of the attention kernel (../../attention/attention-kernel.ts). All arithmetic is
;; f64x2 on f32 inputs promoted exactly, lane for lane the scalar reference's f64 operations in the
;; same order, so the results are bit-identical to it. Helpers are written out in the loops, not called:
;; V8 does not inline WebAssembly calls, and a call per position costs a quarter of dot4's time. Byte addresses are into the imported shared
;; memory (../wasm-arena.ts).
;;
;;   dot4 / dot3 / dot1(q, qStride, k, kStride, np, hd, s, sStride, scale): for R = 4 / 3 / 1 query rows r
;;     (f64 rows at q + r*qStride) and positions p < np (f32 key rows at k + p*kStride):
;;     s[r*sStride + 8p] = ((a0 + a1) + (a2 + a3)) * scale, a_i the sum over d ≡ i (mod 4) of
;;     q[d]*k[d] accumulated in ascending d (lanes [a0, a1] and [a2, a3]); hd a multiple of 4.
;;     dot3 is not written here: the build makes it from dot4 (scripts/attention-dot3.mjs).
;;   vacc2 / vacc1(w, wStride, a, aStride, v, vStride, np, vd): for R = 2 / 1 rows r and p < np in
;;     ascending order, a_r[d] += w_r[p] * v_p[d] (f64 weights at w + r*wStride + 8p, f64
;;     accumulators at a + r*aStride, f32 value rows at v + p*vStride); vd a multiple of 8.
;;   widen(src, dst, n) / narrow(src, dst, n): n values (a multiple of 4) from f32 to f64 (exact) or
;;     from f64 to f32 (rounded to nearest even, as a Float32Array store rounds).
;;   softmax2(s0, s1, n, sinks, sink0, sink1): the reference's softmax of two rows of n f64 scores at
;;     s0 and s1 in place, one row a lane (s1 = s0 for one row): max (from the sink where sinks != 0,
;;     else from -inf), sum of exp(score - max) in ascending order (from exp(sink - max) or 0), then
;;     each weight times 1 / sum.
;;   exps(src, dst, n): f64 dst[i] = exp(src[i]) for i < n (even), the exp softmax2 uses.
;;
;; exp is fdlibm's (e_exp.c, which V8's Math.exp is: src/base/ieee754.cc, with exp(1) = E added),
;; ported lane for lane, so it returns Math.exp's bits (attention-exp.test.ts holds it to that over
;; a million arguments and every branch's edges). It is not written here: the build takes it from
;; swiglu.wat's clamped_swiglu, which carries that port as two independent chains, as
;; $exp2(x, x2) -> (exp(x), exp(x2)) (scripts/fdlibm-exp.mjs); a lone pair goes in as both, the
;; second result dropped. It is the one helper called rather than written out: a call per four
;; scores, beside the exp's hundred-odd operations. Two chains a call, not one: half the calls
;; (exps 1.16x, softmax2 1.1x the speed; V8 orders one chain's code before the other's, so they
;; overlap only as far as the core reorders them). Its constants are immutable globals, each read
;; by one load where V8 built a v128.const anew at each use (exps 1.15x, softmax2 1.1x more).
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "dot4")
    (param $q i32) (param $qStride i32) (param $k i32) (param $kStride i32) (param $np i32)
    (param $hd i32) (param $s i32) (param $sStride i32) (param $scale f64)
    (local $p i32) (local $dk i32) (local $kEnd i32)
    (local $q0 i32) (local $q1 i32) (local $q2 i32) (local $q3 i32)
    (local $s1 i32) (local $s2 i32) (local $s3 i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local $klo v128) (local $khi v128)
    (local.set $kEnd (i32.shl (local.get $hd) (i32.const 2)))
    (local.set $q0 (local.get $q))
    (local.set $q1 (i32.add (local.get $q0) (local.get $qStride)))
    (local.set $q2 (i32.add (local.get $q1) (local.get $qStride)))
    (local.set $q3 (i32.add (local.get $q2) (local.get $qStride)))
    (local.set $s1 (i32.add (local.get $s) (local.get $sStride)))
    (local.set $s2 (i32.add (local.get $s1) (local.get $sStride)))
    (local.set $s3 (i32.add (local.get $s2) (local.get $sStride)))
    (if (i32.eqz (local.get $np)) (then (return)))
    (loop $positions
      (local.set $a0 (v128.const i64x2 0 0))
      (local.set $a1 (v128.const i64x2 0 0))
      (local.set $a2 (v128.const i64x2 0 0))
      (local.set $a3 (v128.const i64x2 0 0))
      (local.set $b0 (v128.const i64x2 0 0))
      (local.set $b1 (v128.const i64x2 0 0))
      (local.set $b2 (v128.const i64x2 0 0))
      (local.set $b3 (v128.const i64x2 0 0))
      (local.set $dk (i32.const 0))
      ;; Four key values at a time; the f64 query rows are read at twice the f32 offset.
      (loop $d
        (local.set $klo (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $k) (local.get $dk)))))
        (local.set $khi (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $k) (local.get $dk)))))
        (local.set $a0 (f64x2.add (local.get $a0) (f64x2.mul
          (v128.load (i32.add (local.get $q0) (i32.shl (local.get $dk) (i32.const 1)))) (local.get $klo))))
        (local.set $b0 (f64x2.add (local.get $b0) (f64x2.mul
          (v128.load offset=16 (i32.add (local.get $q0) (i32.shl (local.get $dk) (i32.const 1)))) (local.get $khi))))
        (local.set $a1 (f64x2.add (local.get $a1) (f64x2.mul
          (v128.load (i32.add (local.get $q1) (i32.shl (local.get $dk) (i32.const 1)))) (local.get $klo))))
        (local.set $b1 (f64x2.add (local.get $b1) (f64x2.mul
          (v128.load offset=16 (i32.add (local.get $q1) (i32.shl (local.get $dk) (i32.const 1)))) (local.get $khi))))
        (local.set $a2 (f64x2.add (local.get $a2) (f64x2.mul
          (v128.load (i32.add (local.get $q2) (i32.shl (local.get $dk) (i32.const 1)))) (local.get $klo))))
        (local.set $b2 (f64x2.add (local.get $b2) (f64x2.mul
          (v128.load offset=16 (i32.add (local.get $q2) (i32.shl (local.get $dk) (i32.const 1)))) (local.get $khi))))
        (local.set $a3 (f64x2.add (local.get $a3) (f64x2.mul
          (v128.load (i32.add (local.get $q3) (i32.shl (local.get $dk) (i32.const 1)))) (local.get $klo))))
        (local.set $b3 (f64x2.add (local.get $b3) (f64x2.mul
          (v128.load offset=16 (i32.add (local.get $q3) (i32.shl (local.get $dk) (i32.const 1)))) (local.get $khi))))
        (br_if $d (i32.lt_u
          (local.tee $dk (i32.add (local.get $dk) (i32.const 16)))
          (local.get $kEnd))))
      (f64.store (i32.add (local.get $s) (i32.shl (local.get $p) (i32.const 3)))
        (f64.mul
          (f64.add
            (f64.add (f64x2.extract_lane 0 (local.get $a0)) (f64x2.extract_lane 1 (local.get $a0)))
            (f64.add (f64x2.extract_lane 0 (local.get $b0)) (f64x2.extract_lane 1 (local.get $b0))))
          (local.get $scale)))
      (f64.store (i32.add (local.get $s1) (i32.shl (local.get $p) (i32.const 3)))
        (f64.mul
          (f64.add
            (f64.add (f64x2.extract_lane 0 (local.get $a1)) (f64x2.extract_lane 1 (local.get $a1)))
            (f64.add (f64x2.extract_lane 0 (local.get $b1)) (f64x2.extract_lane 1 (local.get $b1))))
          (local.get $scale)))
      (f64.store (i32.add (local.get $s2) (i32.shl (local.get $p) (i32.const 3)))
        (f64.mul
          (f64.add
            (f64.add (f64x2.extract_lane 0 (local.get $a2)) (f64x2.extract_lane 1 (local.get $a2)))
            (f64.add (f64x2.extract_lane 0 (local.get $b2)) (f64x2.extract_lane 1 (local.get $b2))))
          (local.get $scale)))
      (f64.store (i32.add (local.get $s3) (i32.shl (local.get $p) (i32.const 3)))
        (f64.mul
          (f64.add
            (f64.add (f64x2.extract_lane 0 (local.get $a3)) (f64x2.extract_lane 1 (local.get $a3)))
            (f64.add (f64x2.extract_lane 0 (local.get $b3)) (f64x2.extract_lane 1 (local.get $b3))))
          (local.get $scale)))
      (local.set $k (i32.add (local.get $k) (local.get $kStride)))
      (br_if $positions (i32.lt_u
        (local.tee $p (i32.add (local.get $p) (i32.const 1)))
        (local.get $np)))))

  (func (export "dot1")
    (param $q i32) (param $qStride i32) (param $k i32) (param $kStride i32) (param $np i32)
    (param $hd i32) (param $s i32) (param $sStride i32) (param $scale f64)
    (local $p i32) (local $dk i32) (local $kEnd i32)
    (local $a v128) (local $b v128)
    (local.set $kEnd (i32.shl (local.get $hd) (i32.const 2)))
    (if (i32.eqz (local.get $np)) (then (return)))
    (loop $positions
      (local.set $a (v128.const i64x2 0 0))
      (local.set $b (v128.const i64x2 0 0))
      (local.set $dk (i32.const 0))
      (loop $d
        (local.set $a (f64x2.add (local.get $a) (f64x2.mul
          (v128.load (i32.add (local.get $q) (i32.shl (local.get $dk) (i32.const 1))))
          (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $k) (local.get $dk)))))))
        (local.set $b (f64x2.add (local.get $b) (f64x2.mul
          (v128.load offset=16 (i32.add (local.get $q) (i32.shl (local.get $dk) (i32.const 1))))
          (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $k) (local.get $dk)))))))
        (br_if $d (i32.lt_u
          (local.tee $dk (i32.add (local.get $dk) (i32.const 16)))
          (local.get $kEnd))))
      (f64.store (i32.add (local.get $s) (i32.shl (local.get $p) (i32.const 3)))
        (f64.mul
          (f64.add
            (f64.add (f64x2.extract_lane 0 (local.get $a)) (f64x2.extract_lane 1 (local.get $a)))
            (f64.add (f64x2.extract_lane 0 (local.get $b)) (f64x2.extract_lane 1 (local.get $b))))
          (local.get $scale)))
      (local.set $k (i32.add (local.get $k) (local.get $kStride)))
      (br_if $positions (i32.lt_u
        (local.tee $p (i32.add (local.get $p) (i32.const 1)))
        (local.get $np)))))

  (func (export "vacc2")
    (param $w i32) (param $wStride i32) (param $a i32) (param $aStride i32) (param $v i32)
    (param $vStride i32) (param $np i32) (param $vd i32)
    (local $db i32) (local $p i32) (local $vp i32) (local $wp i32) (local $acc0 i32) (local $acc1 i32)
    (local $x00 v128) (local $x01 v128) (local $x02 v128) (local $x03 v128)
    (local $x10 v128) (local $x11 v128) (local $x12 v128) (local $x13 v128)
    (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128) (local $ws v128)
    (if (i32.or (i32.eqz (local.get $np)) (i32.eqz (local.get $vd))) (then (return)))
    ;; Eight value columns at a time, held in f64 accumulators across every position.
    (loop $columns
      (local.set $acc0 (i32.add (local.get $a) (i32.shl (local.get $db) (i32.const 1))))
      (local.set $acc1 (i32.add (local.get $acc0) (local.get $aStride)))
      (local.set $x00 (v128.load offset=0 (local.get $acc0)))
      (local.set $x01 (v128.load offset=16 (local.get $acc0)))
      (local.set $x02 (v128.load offset=32 (local.get $acc0)))
      (local.set $x03 (v128.load offset=48 (local.get $acc0)))
      (local.set $x10 (v128.load offset=0 (local.get $acc1)))
      (local.set $x11 (v128.load offset=16 (local.get $acc1)))
      (local.set $x12 (v128.load offset=32 (local.get $acc1)))
      (local.set $x13 (v128.load offset=48 (local.get $acc1)))
      (local.set $vp (i32.add (local.get $v) (local.get $db)))
      (local.set $wp (i32.const 0))
      (local.set $p (i32.const 0))
      (loop $positions
        (local.set $v0 (f64x2.promote_low_f32x4 (v128.load64_zero (local.get $vp))))
        (local.set $v1 (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (local.get $vp))))
        (local.set $v2 (f64x2.promote_low_f32x4 (v128.load64_zero offset=16 (local.get $vp))))
        (local.set $v3 (f64x2.promote_low_f32x4 (v128.load64_zero offset=24 (local.get $vp))))
        (local.set $ws (f64x2.splat (f64.load (i32.add (local.get $w) (local.get $wp)))))
        (local.set $x00 (f64x2.add (local.get $x00) (f64x2.mul (local.get $ws) (local.get $v0))))
        (local.set $x01 (f64x2.add (local.get $x01) (f64x2.mul (local.get $ws) (local.get $v1))))
        (local.set $x02 (f64x2.add (local.get $x02) (f64x2.mul (local.get $ws) (local.get $v2))))
        (local.set $x03 (f64x2.add (local.get $x03) (f64x2.mul (local.get $ws) (local.get $v3))))
        (local.set $ws (f64x2.splat (f64.load
          (i32.add (i32.add (local.get $w) (local.get $wStride)) (local.get $wp)))))
        (local.set $x10 (f64x2.add (local.get $x10) (f64x2.mul (local.get $ws) (local.get $v0))))
        (local.set $x11 (f64x2.add (local.get $x11) (f64x2.mul (local.get $ws) (local.get $v1))))
        (local.set $x12 (f64x2.add (local.get $x12) (f64x2.mul (local.get $ws) (local.get $v2))))
        (local.set $x13 (f64x2.add (local.get $x13) (f64x2.mul (local.get $ws) (local.get $v3))))
        (local.set $vp (i32.add (local.get $vp) (local.get $vStride)))
        (local.set $wp (i32.add (local.get $wp) (i32.const 8)))
        (br_if $positions (i32.lt_u
          (local.tee $p (i32.add (local.get $p) (i32.const 1)))
          (local.get $np))))
      (v128.store offset=0 (local.get $acc0) (local.get $x00))
      (v128.store offset=16 (local.get $acc0) (local.get $x01))
      (v128.store offset=32 (local.get $acc0) (local.get $x02))
      (v128.store offset=48 (local.get $acc0) (local.get $x03))
      (v128.store offset=0 (local.get $acc1) (local.get $x10))
      (v128.store offset=16 (local.get $acc1) (local.get $x11))
      (v128.store offset=32 (local.get $acc1) (local.get $x12))
      (v128.store offset=48 (local.get $acc1) (local.get $x13))
      (br_if $columns (i32.lt_u
        (local.tee $db (i32.add (local.get $db) (i32.const 32)))
        (i32.shl (local.get $vd) (i32.const 2))))))

  (func (export "vacc1")
    (param $w i32) (param $wStride i32) (param $a i32) (param $aStride i32) (param $v i32)
    (param $vStride i32) (param $np i32) (param $vd i32)
    (local $db i32) (local $p i32) (local $vp i32) (local $wp i32) (local $acc i32)
    (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) (local $ws v128)
    (if (i32.or (i32.eqz (local.get $np)) (i32.eqz (local.get $vd))) (then (return)))
    (loop $columns
      (local.set $acc (i32.add (local.get $a) (i32.shl (local.get $db) (i32.const 1))))
      (local.set $x0 (v128.load offset=0 (local.get $acc)))
      (local.set $x1 (v128.load offset=16 (local.get $acc)))
      (local.set $x2 (v128.load offset=32 (local.get $acc)))
      (local.set $x3 (v128.load offset=48 (local.get $acc)))
      (local.set $vp (i32.add (local.get $v) (local.get $db)))
      (local.set $wp (i32.const 0))
      (local.set $p (i32.const 0))
      (loop $positions
        (local.set $ws (f64x2.splat (f64.load (i32.add (local.get $w) (local.get $wp)))))
        (local.set $x0 (f64x2.add (local.get $x0) (f64x2.mul (local.get $ws) (f64x2.promote_low_f32x4 (v128.load64_zero (local.get $vp))))))
        (local.set $x1 (f64x2.add (local.get $x1)
          (f64x2.mul (local.get $ws) (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (local.get $vp))))))
        (local.set $x2 (f64x2.add (local.get $x2)
          (f64x2.mul (local.get $ws) (f64x2.promote_low_f32x4 (v128.load64_zero offset=16 (local.get $vp))))))
        (local.set $x3 (f64x2.add (local.get $x3)
          (f64x2.mul (local.get $ws) (f64x2.promote_low_f32x4 (v128.load64_zero offset=24 (local.get $vp))))))
        (local.set $vp (i32.add (local.get $vp) (local.get $vStride)))
        (local.set $wp (i32.add (local.get $wp) (i32.const 8)))
        (br_if $positions (i32.lt_u
          (local.tee $p (i32.add (local.get $p) (i32.const 1)))
          (local.get $np))))
      (v128.store offset=0 (local.get $acc) (local.get $x0))
      (v128.store offset=16 (local.get $acc) (local.get $x1))
      (v128.store offset=32 (local.get $acc) (local.get $x2))
      (v128.store offset=48 (local.get $acc) (local.get $x3))
      (br_if $columns (i32.lt_u
        (local.tee $db (i32.add (local.get $db) (i32.const 32)))
        (i32.shl (local.get $vd) (i32.const 2))))))

  (func (export "widen") (param $src i32) (param $dst i32) (param $n i32)
    (local $i i32) (local $end i32)
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (if (i32.eqz (local.get $end)) (then (return)))
    (loop $quads
      (v128.store (i32.add (local.get $dst) (i32.shl (local.get $i) (i32.const 1)))
        (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $src) (local.get $i)))))
      (v128.store offset=16 (i32.add (local.get $dst) (i32.shl (local.get $i) (i32.const 1)))
        (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $src) (local.get $i)))))
      (br_if $quads (i32.lt_u
        (local.tee $i (i32.add (local.get $i) (i32.const 16)))
        (local.get $end)))))

  (func (export "narrow") (param $src i32) (param $dst i32) (param $n i32)
    (local $i i32) (local $end i32)
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (if (i32.eqz (local.get $end)) (then (return)))
    (loop $quads
      (v128.store (i32.add (local.get $dst) (local.get $i))
        (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
          (f32x4.demote_f64x2_zero (v128.load (i32.add (local.get $src) (i32.shl (local.get $i) (i32.const 1)))))
          (f32x4.demote_f64x2_zero
            (v128.load offset=16 (i32.add (local.get $src) (i32.shl (local.get $i) (i32.const 1)))))))
      (br_if $quads (i32.lt_u
        (local.tee $i (i32.add (local.get $i) (i32.const 16)))
        (local.get $end)))))

  ;; (func $exp2) goes here: the build takes it from swiglu.wat (scripts/fdlibm-exp.mjs).

  (func (export "exps") (param $src i32) (param $dst i32) (param $n i32)
    (local $i i32) (local $end i32) (local $a v128) (local $b v128)
    (local.set $end (i32.shl (local.get $n) (i32.const 3)))
    (block $quadsDone
      (loop $quads
        (br_if $quadsDone (i32.gt_u (i32.add (local.get $i) (i32.const 32)) (local.get $end)))
        (call $exp2
          (v128.load (i32.add (local.get $src) (local.get $i)))
          (v128.load offset=16 (i32.add (local.get $src) (local.get $i))))
        (local.set $b)
        (local.set $a)
        (v128.store (i32.add (local.get $dst) (local.get $i)) (local.get $a))
        (v128.store offset=16 (i32.add (local.get $dst) (local.get $i)) (local.get $b))
        (local.set $i (i32.add (local.get $i) (i32.const 32)))
        (br $quads)))
    ;; n not a multiple of 4: the last two values, through one chain.
    (if (i32.lt_u (local.get $i) (local.get $end))
      (then
        (local.set $a (v128.load (i32.add (local.get $src) (local.get $i))))
        (call $exp2 (local.get $a) (local.get $a))
        (drop)
        (local.set $a)
        (v128.store (i32.add (local.get $dst) (local.get $i)) (local.get $a)))))

  (func (export "softmax2")
    (param $s0 i32) (param $s1 i32) (param $n i32) (param $sinks i32) (param $sink0 f64) (param $sink1 f64)
    (local $i i32) (local $end i32) (local $max v128) (local $sum v128) (local $e v128) (local $e2 v128)
    (local $sink v128)
    (local.set $end (i32.shl (local.get $n) (i32.const 3)))
    (local.set $sink (f64x2.replace_lane 1 (f64x2.splat (local.get $sink0)) (local.get $sink1)))
    (local.set $max (v128.const f64x2 -inf -inf))
    (if (local.get $sinks) (then (local.set $max (local.get $sink))))
    (local.set $i (i32.const 0))
    (block $maxDone
      (loop $maxes
        (br_if $maxDone (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $max (f64x2.max (local.get $max) (v128.load64_lane 1
          (i32.add (local.get $s1) (local.get $i))
          (v128.load64_zero (i32.add (local.get $s0) (local.get $i))))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $maxes)))
    (local.set $sum (v128.const i64x2 0 0))
    (if (local.get $sinks)
      (then
        (local.set $sum (f64x2.sub (local.get $sink) (local.get $max)))
        (call $exp2 (local.get $sum) (local.get $sum))
        (drop)
        (local.set $sum)))
    ;; Each row's sum in ascending order, as the reference adds; two positions a step, their exps
    ;; two independent chains.
    (local.set $i (i32.const 0))
    (block $expDone
      (loop $exps
        (br_if $expDone (i32.gt_u (i32.add (local.get $i) (i32.const 16)) (local.get $end)))
        (call $exp2
          (f64x2.sub
            (v128.load64_lane 1
              (i32.add (local.get $s1) (local.get $i))
              (v128.load64_zero (i32.add (local.get $s0) (local.get $i))))
            (local.get $max))
          (f64x2.sub
            (v128.load64_lane offset=8 1
              (i32.add (local.get $s1) (local.get $i))
              (v128.load64_zero offset=8 (i32.add (local.get $s0) (local.get $i))))
            (local.get $max)))
        (local.set $e2)
        (local.set $e)
        (v128.store64_lane 0 (i32.add (local.get $s0) (local.get $i)) (local.get $e))
        (v128.store64_lane 1 (i32.add (local.get $s1) (local.get $i)) (local.get $e))
        (v128.store64_lane offset=8 0 (i32.add (local.get $s0) (local.get $i)) (local.get $e2))
        (v128.store64_lane offset=8 1 (i32.add (local.get $s1) (local.get $i)) (local.get $e2))
        (local.set $sum (f64x2.add (f64x2.add (local.get $sum) (local.get $e)) (local.get $e2)))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $exps)))
    ;; n odd: the last position, through one chain.
    (if (i32.lt_u (local.get $i) (local.get $end))
      (then
        (local.set $e (f64x2.sub
          (v128.load64_lane 1
            (i32.add (local.get $s1) (local.get $i))
            (v128.load64_zero (i32.add (local.get $s0) (local.get $i))))
          (local.get $max)))
        (call $exp2 (local.get $e) (local.get $e))
        (drop)
        (local.set $e)
        (v128.store64_lane 0 (i32.add (local.get $s0) (local.get $i)) (local.get $e))
        (v128.store64_lane 1 (i32.add (local.get $s1) (local.get $i)) (local.get $e))
        (local.set $sum (f64x2.add (local.get $sum) (local.get $e)))))
    (local.set $sum (f64x2.div (v128.const f64x2 1 1) (local.get $sum)))
    (local.set $i (i32.const 0))
    (block $scaleDone
      (loop $scales
        (br_if $scaleDone (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $e (f64x2.mul
          (v128.load64_lane 1
            (i32.add (local.get $s1) (local.get $i))
            (v128.load64_zero (i32.add (local.get $s0) (local.get $i))))
          (local.get $sum)))
        (v128.store64_lane 0 (i32.add (local.get $s0) (local.get $i)) (local.get $e))
        (v128.store64_lane 1 (i32.add (local.get $s1) (local.get $i)) (local.get $e))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $scales)))))
