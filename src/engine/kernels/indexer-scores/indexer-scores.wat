;; The scoring loop of DeepSeek sparse attention's indexer (indexer-scores.ts; the block is
;; ../../blocks/attention/dsa-indexer.ts). All arithmetic is f64 on f32 inputs promoted exactly:
;; each head's dot product is accumulated in ascending feature order and the heads are added to a
;; score in ascending head order, the plain reference's operations in its order, so the scores are
;; bit-identical to it. SIMD runs across heads, never across the features of one dot product: the
;; two f64 lanes are two heads of one query. Byte addresses are into the imported memory.
;;
;;   scores(q, pairs, d, w, k, count, s): for positions p < count (f32 key rows of d values at
;;     k + 4dp) and head pairs j < pairs (heads 2j and 2j+1; the f64x2 of their query features i at
;;     q + 16(i * pairs + j); their f64 weights at w + 16j and w + 16j + 8):
;;     dot_h = sum over i ascending of q_h[i] * key_p[i];
;;     s[p] (f64 at s + 8p, zero on entry) += w_h * dot_h for each head h in ascending order whose
;;     dot_h > 0 (ReLU). Positions go two at a time, so two dot chains overlap; an odd count reads
;;     one row past the last key (the caller leaves it in the memory) and stores nothing for it.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "scores")
    (param $q i32) (param $pairs i32) (param $d i32) (param $w i32) (param $k i32) (param $count i32)
    (param $s i32)
    (local $j i32) (local $p i32) (local $i i32)
    (local $qj i32) (local $qStride i32) (local $rowBytes i32)
    (local $ka i32) (local $kb i32) (local $sa i32)
    (local $w0 f64) (local $w1 f64) (local $dot f64) (local $score f64)
    (local $qi v128) (local $a v128) (local $b v128)
    (if (i32.or (i32.eqz (local.get $count)) (i32.eqz (local.get $pairs))) (then (return)))
    (local.set $rowBytes (i32.shl (local.get $d) (i32.const 2)))
    (local.set $qStride (i32.shl (local.get $pairs) (i32.const 4)))
    (loop $headPairs
      (local.set $qj (i32.add (local.get $q) (i32.shl (local.get $j) (i32.const 4))))
      (local.set $w0 (f64.load (i32.add (local.get $w) (i32.shl (local.get $j) (i32.const 4)))))
      (local.set $w1 (f64.load offset=8 (i32.add (local.get $w) (i32.shl (local.get $j) (i32.const 4)))))
      (local.set $p (i32.const 0))
      (loop $positions
        (local.set $ka (i32.add (local.get $k) (i32.mul (local.get $p) (local.get $rowBytes))))
        (local.set $kb (i32.add (local.get $ka) (local.get $rowBytes)))
        (local.set $a (v128.const i64x2 0 0))
        (local.set $b (v128.const i64x2 0 0))
        (local.set $i (i32.const 0))
        ;; a: both heads' dots with key p; b: with key p + 1.
        (loop $features
          (local.set $qi (v128.load (i32.add (local.get $qj) (i32.mul (local.get $i) (local.get $qStride)))))
          (local.set $a (f64x2.add (local.get $a) (f64x2.mul (local.get $qi)
            (f64x2.splat (f64.promote_f32 (f32.load (i32.add (local.get $ka) (i32.shl (local.get $i) (i32.const 2)))))))))
          (local.set $b (f64x2.add (local.get $b) (f64x2.mul (local.get $qi)
            (f64x2.splat (f64.promote_f32 (f32.load (i32.add (local.get $kb) (i32.shl (local.get $i) (i32.const 2)))))))))
          (br_if $features (i32.lt_u
            (local.tee $i (i32.add (local.get $i) (i32.const 1)))
            (local.get $d))))
        ;; Position p: head 2j, then head 2j + 1, each only where its dot is positive.
        (local.set $sa (i32.add (local.get $s) (i32.shl (local.get $p) (i32.const 3))))
        (local.set $score (f64.load (local.get $sa)))
        (local.set $dot (f64x2.extract_lane 0 (local.get $a)))
        (local.set $score (select
          (f64.add (local.get $score) (f64.mul (local.get $w0) (local.get $dot)))
          (local.get $score)
          (f64.gt (local.get $dot) (f64.const 0))))
        (local.set $dot (f64x2.extract_lane 1 (local.get $a)))
        (local.set $score (select
          (f64.add (local.get $score) (f64.mul (local.get $w1) (local.get $dot)))
          (local.get $score)
          (f64.gt (local.get $dot) (f64.const 0))))
        (f64.store (local.get $sa) (local.get $score))
        ;; Position p + 1, when there is one.
        (if (i32.lt_u (i32.add (local.get $p) (i32.const 1)) (local.get $count))
          (then
            (local.set $sa (i32.add (local.get $sa) (i32.const 8)))
            (local.set $score (f64.load (local.get $sa)))
            (local.set $dot (f64x2.extract_lane 0 (local.get $b)))
            (local.set $score (select
              (f64.add (local.get $score) (f64.mul (local.get $w0) (local.get $dot)))
              (local.get $score)
              (f64.gt (local.get $dot) (f64.const 0))))
            (local.set $dot (f64x2.extract_lane 1 (local.get $b)))
            (local.set $score (select
              (f64.add (local.get $score) (f64.mul (local.get $w1) (local.get $dot)))
              (local.get $score)
              (f64.gt (local.get $dot) (f64.const 0))))
            (f64.store (local.get $sa) (local.get $score))))
        (br_if $positions (i32.lt_u
          (local.tee $p (i32.add (local.get $p) (i32.const 2)))
          (local.get $count))))
      (br_if $headPairs (i32.lt_u
        (local.tee $j (i32.add (local.get $j) (i32.const 1)))
        (local.get $pairs))))))
