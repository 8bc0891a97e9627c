;; swiglu(g, u, count): for i < 4·count, f32 g[i] = (g[i] / (1 + exp(-g[i]))) · u[i]
;;
;; g and u are byte offsets into the imported shared memory. Each value is promoted to f64 exactly
;; and the expression evaluated in f64 in the same order as the plain kernel (../swiglu.ts), then
;; rounded to f32 once; only exp differs: 2^k from its exponent bits times a degree-11 Taylor
;; polynomial of r = x - k·ln2 (|r| <= ln2/2), about 1e-14 relative to the exact value where
;; Math.exp is within an ulp, so the f32 results agree except where the f64 value falls within that
;; of a rounding boundary (a few in a million). exp(x) for x below -700 is taken as exp(-700), which
;; changes nothing after the f32 rounding (1 + e is 1 either way), and above 700 as infinity; NaN
;; stays NaN. Constants are written as hex floats so they are the exact f64 values meant.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "swiglu") (param $gAt i32) (param $uAt i32) (param $count i32)
    (local $i i32) (local $end i32)
    (local $g v128) (local $x v128) (local $r v128) (local $kBits v128) (local $k v128) (local $e v128)
    (local.set $end (i32.shl (local.get $count) (i32.const 4)))
    (if (i32.eqz (local.get $end)) (then (return)))
    ;; Two values a step, as f64 lanes: (g / (1 + exp(-g))) · u, rounded to f32 once.
    (loop $pairs
      (local.set $g (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $gAt) (local.get $i)))))
      (local.set $x (f64x2.neg (local.get $g)))
      ;; Pseudo-min/max keep a NaN in x.
      (local.set $r (f64x2.pmax
        (f64x2.pmin (local.get $x) (v128.const f64x2 700 700))
        (v128.const f64x2 -700 -700)))
      ;; k = r·log2(e) rounded to nearest (even) by adding 1.5·2^52, whose low bits then hold k.
      (local.set $kBits (f64x2.add
        (f64x2.mul (local.get $r) (v128.const f64x2 0x1.71547652b82fep0 0x1.71547652b82fep0))
        (v128.const f64x2 0x1.8p52 0x1.8p52)))
      (local.set $k (f64x2.sub (local.get $kBits) (v128.const f64x2 0x1.8p52 0x1.8p52)))
      ;; r - k·ln2, with ln2 split so that k·LN2_HI is exact for |k| < 2^11 (fdlibm's constants).
      (local.set $r (f64x2.sub
        (f64x2.sub (local.get $r)
          (f64x2.mul (local.get $k) (v128.const f64x2 0x1.62e42feep-1 0x1.62e42feep-1)))
        (f64x2.mul (local.get $k) (v128.const f64x2 0x1.a39ef35793c76p-33 0x1.a39ef35793c76p-33))))
      ;; e^r = Σ r^j / j! for j <= 11, by Horner's rule; then times 2^k from its exponent bits
      ;; (|k| <= 1010, inside the normal range; the shifter's own bits leave through the top).
      (local.set $e (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
        (f64x2.add (f64x2.mul
          (v128.const f64x2 0x1.ae64567f544e4p-26 0x1.ae64567f544e4p-26) ;; 1/11!
          (local.get $r)) (v128.const f64x2 0x1.27e4fb7789f5cp-22 0x1.27e4fb7789f5cp-22)) ;; 1/10!
          (local.get $r)) (v128.const f64x2 0x1.71de3a556c734p-19 0x1.71de3a556c734p-19)) ;; 1/9!
          (local.get $r)) (v128.const f64x2 0x1.a01a01a01a01ap-16 0x1.a01a01a01a01ap-16)) ;; 1/8!
          (local.get $r)) (v128.const f64x2 0x1.a01a01a01a01ap-13 0x1.a01a01a01a01ap-13)) ;; 1/7!
          (local.get $r)) (v128.const f64x2 0x1.6c16c16c16c17p-10 0x1.6c16c16c16c17p-10)) ;; 1/6!
          (local.get $r)) (v128.const f64x2 0x1.1111111111111p-7 0x1.1111111111111p-7)) ;; 1/5!
          (local.get $r)) (v128.const f64x2 0x1.5555555555555p-5 0x1.5555555555555p-5)) ;; 1/4!
          (local.get $r)) (v128.const f64x2 0x1.5555555555555p-3 0x1.5555555555555p-3)) ;; 1/3!
          (local.get $r)) (v128.const f64x2 0.5 0.5)) ;; 1/2!
          (local.get $r)) (v128.const f64x2 1 1)) ;; 1/1!
          (local.get $r)) (v128.const f64x2 1 1)) ;; 1/0!
        (i64x2.shl
          (i64x2.add (local.get $kBits) (v128.const i64x2 1023 1023))
          (i32.const 52))))
      (local.set $e (v128.bitselect
        (v128.const f64x2 inf inf)
        (local.get $e)
        (f64x2.gt (local.get $x) (v128.const f64x2 700 700))))
      (v128.store64_lane 0 (i32.add (local.get $gAt) (local.get $i))
        (f32x4.demote_f64x2_zero (f64x2.mul
          (f64x2.div (local.get $g) (f64x2.add (v128.const f64x2 1 1) (local.get $e)))
          (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $uAt) (local.get $i)))))))
      (br_if $pairs (i32.lt_u
        (local.tee $i (i32.add (local.get $i) (i32.const 8)))
        (local.get $end))))))
