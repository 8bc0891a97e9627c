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
        (local.get $end)))))

  ;; clamped_swiglu(gu, out, count, limit, alpha): gpt-oss's clamped SwiGLU (the plain kernel is
  ;; clampedSwiglu in ../../blocks/mlp/clamped-swiglu-moe.ts), the same bits: for i < count (a
  ;; multiple of 4; limit > 0),
  ;; over the interleaved f32 pairs at byte gu + 8i (gate, then linear):
  ;;   glu = min(gate, limit), lin = min(max(lin, -limit), limit),
  ;;   f32 at byte out + 4i = (glu / (1 + exp(-alpha · glu))) · (lin + 1), in f64, rounded once.
  ;; exp is V8's Math.exp (base/ieee754.cc, fdlibm's __ieee754_exp with exp(1) = e) operation for
  ;; operation, two lanes at once: its branches become selects. Where fdlibm reduces (|x| above
  ;; 0.5·ln2 by the high word) k = trunc(x/ln2 ± 1/2) (its 1.5·ln2 case is the same k = ±1 and the
  ;; same hi, lo), else k = 0, hi = x, lo = 0 (its k = 0 formula has the same value: (x·c)/(c - 2)
  ;; is -((x·c)/(2 - c)) exactly, and x·c is 0 only where |x| < 2^-28, taken apart: 1 + x); 2^k
  ;; multiplies as two exact-then-rounded steps as V8 does (2^(k-1)·2 for k >= -1021, which is its
  ;; y·2·2^1023 at k = 1024; 2^(k+1000)·2^-1000 below); above the overflow threshold infinity,
  ;; below the underflow one 0, NaN stays NaN. Pseudo-min/max with the value first are Math.min's
  ;; and max's here (a NaN value stays, the limits are not zeros).
  ;; Four values a step, as two independent chains (locals $v and $v2, statements interleaved): one
  ;; chain's latency bounds the loop (1.25-1.35x slower alone).
  (func (export "clamped_swiglu")
    (param $gu i32) (param $out i32) (param $count i32) (param $limit f64) (param $alpha f64)
    (local $end i32) (local $pair v128) (local $glu v128) (local $lin v128) (local $x v128)
    (local $hx v128) (local $reduce v128) (local $t v128) (local $hi v128) (local $lo v128)
    (local $z v128) (local $c v128) (local $y v128) (local $kBits v128) (local $low v128)
    (local $hiLimit v128) (local $loLimit v128) (local $negAlpha v128)
    (local $pair2 v128) (local $glu2 v128) (local $lin2 v128) (local $x2 v128) (local $hx2 v128)
    (local $reduce2 v128) (local $t2 v128) (local $hi2 v128) (local $lo2 v128) (local $z2 v128)
    (local $c2 v128) (local $y2 v128) (local $kBits2 v128) (local $low2 v128)
    (if (i32.eqz (local.get $count)) (then (return)))
    (local.set $end (i32.add (local.get $gu) (i32.shl (local.get $count) (i32.const 3))))
    (local.set $hiLimit (f64x2.splat (local.get $limit)))
    (local.set $loLimit (f64x2.neg (local.get $hiLimit)))
    (local.set $negAlpha (f64x2.splat (f64.neg (local.get $alpha))))
    (loop $pairs
      ;; Two (gate, linear) pairs a chain: the gates to f64 lanes, the linear halves to others.
      (local.set $pair (v128.load (local.get $gu)))
      (local.set $pair2 (v128.load offset=16 (local.get $gu)))
      (local.set $glu (f64x2.pmin (f64x2.promote_low_f32x4
        (i8x16.shuffle 0 1 2 3 8 9 10 11 0 1 2 3 8 9 10 11 (local.get $pair) (local.get $pair))) (local.get $hiLimit)))
      (local.set $glu2 (f64x2.pmin (f64x2.promote_low_f32x4
        (i8x16.shuffle 0 1 2 3 8 9 10 11 0 1 2 3 8 9 10 11 (local.get $pair2) (local.get $pair2))) (local.get $hiLimit)))
      (local.set $lin (f64x2.pmin (f64x2.pmax (f64x2.promote_low_f32x4
        (i8x16.shuffle 4 5 6 7 12 13 14 15 4 5 6 7 12 13 14 15 (local.get $pair) (local.get $pair))) (local.get $loLimit)) (local.get $hiLimit)))
      (local.set $lin2 (f64x2.pmin (f64x2.pmax (f64x2.promote_low_f32x4
        (i8x16.shuffle 4 5 6 7 12 13 14 15 4 5 6 7 12 13 14 15 (local.get $pair2) (local.get $pair2))) (local.get $loLimit)) (local.get $hiLimit)))
      (local.set $x (f64x2.mul (local.get $negAlpha) (local.get $glu)))
      (local.set $x2 (f64x2.mul (local.get $negAlpha) (local.get $glu2)))
      ;; |x|'s high word.
      (local.set $hx (i64x2.shr_u
        (v128.and (local.get $x) (v128.const i64x2 0x7fffffffffffffff 0x7fffffffffffffff))
        (i32.const 32)))
      (local.set $hx2 (i64x2.shr_u
        (v128.and (local.get $x2) (v128.const i64x2 0x7fffffffffffffff 0x7fffffffffffffff))
        (i32.const 32)))
      (local.set $reduce (i64x2.gt_s (local.get $hx) (v128.const i64x2 0x3fd62e42 0x3fd62e42)))
      (local.set $reduce2 (i64x2.gt_s (local.get $hx2) (v128.const i64x2 0x3fd62e42 0x3fd62e42)))
      ;; k as a float: trunc(x·(1/ln2) + (x < 0 ? -0.5 : 0.5)) where reduced, else 0.
      (local.set $t (v128.and (local.get $reduce) (f64x2.trunc (f64x2.add
        (f64x2.mul (local.get $x) (v128.const f64x2 0x1.71547652b82fep0 0x1.71547652b82fep0))
        (v128.or (v128.const f64x2 0.5 0.5)
          (v128.and (local.get $x) (v128.const i64x2 0x8000000000000000 0x8000000000000000)))))))
      (local.set $t2 (v128.and (local.get $reduce2) (f64x2.trunc (f64x2.add
        (f64x2.mul (local.get $x2) (v128.const f64x2 0x1.71547652b82fep0 0x1.71547652b82fep0))
        (v128.or (v128.const f64x2 0.5 0.5)
          (v128.and (local.get $x2) (v128.const i64x2 0x8000000000000000 0x8000000000000000)))))))
      ;; hi = x - t·ln2HI (exact), lo = t·ln2LO; where not reduced, hi = x and lo = 0.
      (local.set $hi (f64x2.sub (local.get $x)
        (f64x2.mul (local.get $t) (v128.const f64x2 0x1.62e42feep-1 0x1.62e42feep-1))))
      (local.set $hi2 (f64x2.sub (local.get $x2)
        (f64x2.mul (local.get $t2) (v128.const f64x2 0x1.62e42feep-1 0x1.62e42feep-1))))
      (local.set $lo (f64x2.mul (local.get $t) (v128.const f64x2 0x1.a39ef35793c76p-33 0x1.a39ef35793c76p-33)))
      (local.set $lo2 (f64x2.mul (local.get $t2) (v128.const f64x2 0x1.a39ef35793c76p-33 0x1.a39ef35793c76p-33)))
      (local.set $z (v128.bitselect (f64x2.sub (local.get $hi) (local.get $lo)) (local.get $x) (local.get $reduce)))
      (local.set $z2 (v128.bitselect (f64x2.sub (local.get $hi2) (local.get $lo2)) (local.get $x2) (local.get $reduce2)))
      (local.set $hi (v128.bitselect (local.get $hi) (local.get $x) (local.get $reduce)))
      (local.set $hi2 (v128.bitselect (local.get $hi2) (local.get $x2) (local.get $reduce2)))
      (local.set $lo (v128.and (local.get $lo) (local.get $reduce)))
      (local.set $lo2 (v128.and (local.get $lo2) (local.get $reduce2)))
      ;; c = z - z²·(P1 + z²·(P2 + z²·(P3 + z²·(P4 + z²·P5)))); y = 1 - ((lo - (z·c)/(2 - c)) - hi).
      (local.set $y (f64x2.mul (local.get $z) (local.get $z)))
      (local.set $y2 (f64x2.mul (local.get $z2) (local.get $z2)))
      (local.set $c (f64x2.sub (local.get $z) (f64x2.mul (local.get $y)
        (f64x2.add (v128.const f64x2 0x1.555555555553ep-3 0x1.555555555553ep-3) (f64x2.mul (local.get $y)
        (f64x2.add (v128.const f64x2 -0x1.6c16c16bebd93p-9 -0x1.6c16c16bebd93p-9) (f64x2.mul (local.get $y)
        (f64x2.add (v128.const f64x2 0x1.1566aaf25de2cp-14 0x1.1566aaf25de2cp-14) (f64x2.mul (local.get $y)
        (f64x2.add (v128.const f64x2 -0x1.bbd41c5d26bf1p-20 -0x1.bbd41c5d26bf1p-20) (f64x2.mul (local.get $y)
          (v128.const f64x2 0x1.6376972bea4d0p-25 0x1.6376972bea4d0p-25))))))))))))
      (local.set $c2 (f64x2.sub (local.get $z2) (f64x2.mul (local.get $y2)
        (f64x2.add (v128.const f64x2 0x1.555555555553ep-3 0x1.555555555553ep-3) (f64x2.mul (local.get $y2)
        (f64x2.add (v128.const f64x2 -0x1.6c16c16bebd93p-9 -0x1.6c16c16bebd93p-9) (f64x2.mul (local.get $y2)
        (f64x2.add (v128.const f64x2 0x1.1566aaf25de2cp-14 0x1.1566aaf25de2cp-14) (f64x2.mul (local.get $y2)
        (f64x2.add (v128.const f64x2 -0x1.bbd41c5d26bf1p-20 -0x1.bbd41c5d26bf1p-20) (f64x2.mul (local.get $y2)
          (v128.const f64x2 0x1.6376972bea4d0p-25 0x1.6376972bea4d0p-25))))))))))))
      (local.set $y (f64x2.sub (v128.const f64x2 1 1) (f64x2.sub
        (f64x2.sub (local.get $lo) (f64x2.div (f64x2.mul (local.get $z) (local.get $c))
          (f64x2.sub (v128.const f64x2 2 2) (local.get $c))))
        (local.get $hi))))
      (local.set $y2 (f64x2.sub (v128.const f64x2 1 1) (f64x2.sub
        (f64x2.sub (local.get $lo2) (f64x2.div (f64x2.mul (local.get $z2) (local.get $c2))
          (f64x2.sub (v128.const f64x2 2 2) (local.get $c2))))
        (local.get $hi2))))
      ;; Times 2^k (k: t + 1.5·2^52 less its bits at k = 0) in two steps, the first exact and
      ;; normal: 2^(k-1) then 2 for k >= 0, 2^(k+1) then 1/2 for -1021 <= k < 0, 2^(k+1000) then
      ;; 2^-1000 below.
      (local.set $kBits (i64x2.sub (f64x2.add (local.get $t) (v128.const f64x2 0x1.8p52 0x1.8p52))
        (v128.const i64x2 0x4338000000000000 0x4338000000000000)))
      (local.set $kBits2 (i64x2.sub (f64x2.add (local.get $t2) (v128.const f64x2 0x1.8p52 0x1.8p52))
        (v128.const i64x2 0x4338000000000000 0x4338000000000000)))
      (local.set $low (i64x2.lt_s (local.get $kBits) (v128.const i64x2 -1021 -1021)))
      (local.set $low2 (i64x2.lt_s (local.get $kBits2) (v128.const i64x2 -1021 -1021)))
      (local.set $c (i64x2.lt_s (local.get $kBits) (v128.const i64x2 0 0)))
      (local.set $c2 (i64x2.lt_s (local.get $kBits2) (v128.const i64x2 0 0)))
      (local.set $y (f64x2.mul
        (f64x2.mul (local.get $y) (i64x2.shl
          (i64x2.add (local.get $kBits) (v128.bitselect (v128.const i64x2 2023 2023)
            (v128.bitselect (v128.const i64x2 1024 1024) (v128.const i64x2 1022 1022) (local.get $c))
            (local.get $low)))
          (i32.const 52)))
        (v128.bitselect (v128.const f64x2 0x1p-1000 0x1p-1000)
          (v128.bitselect (v128.const f64x2 0.5 0.5) (v128.const f64x2 2 2) (local.get $c))
          (local.get $low))))
      (local.set $y2 (f64x2.mul
        (f64x2.mul (local.get $y2) (i64x2.shl
          (i64x2.add (local.get $kBits2) (v128.bitselect (v128.const i64x2 2023 2023)
            (v128.bitselect (v128.const i64x2 1024 1024) (v128.const i64x2 1022 1022) (local.get $c2))
            (local.get $low2)))
          (i32.const 52)))
        (v128.bitselect (v128.const f64x2 0x1p-1000 0x1p-1000)
          (v128.bitselect (v128.const f64x2 0.5 0.5) (v128.const f64x2 2 2) (local.get $c2))
          (local.get $low2))))
      ;; |x| < 2^-28: 1 + x; x = 1: e; past the thresholds: infinity or 0; NaN: NaN.
      (local.set $y (v128.bitselect (f64x2.add (v128.const f64x2 1 1) (local.get $x)) (local.get $y)
        (i64x2.lt_s (local.get $hx) (v128.const i64x2 0x3e300000 0x3e300000))))
      (local.set $y2 (v128.bitselect (f64x2.add (v128.const f64x2 1 1) (local.get $x2)) (local.get $y2)
        (i64x2.lt_s (local.get $hx2) (v128.const i64x2 0x3e300000 0x3e300000))))
      (local.set $y (v128.bitselect (v128.const f64x2 0x1.5bf0a8b145769p1 0x1.5bf0a8b145769p1) (local.get $y)
        (f64x2.eq (local.get $x) (v128.const f64x2 1 1))))
      (local.set $y2 (v128.bitselect (v128.const f64x2 0x1.5bf0a8b145769p1 0x1.5bf0a8b145769p1) (local.get $y2)
        (f64x2.eq (local.get $x2) (v128.const f64x2 1 1))))
      (local.set $y (v128.bitselect (v128.const f64x2 inf inf) (local.get $y)
        (f64x2.gt (local.get $x) (v128.const f64x2 0x1.62e42fefa39efp9 0x1.62e42fefa39efp9))))
      (local.set $y2 (v128.bitselect (v128.const f64x2 inf inf) (local.get $y2)
        (f64x2.gt (local.get $x2) (v128.const f64x2 0x1.62e42fefa39efp9 0x1.62e42fefa39efp9))))
      (local.set $y (v128.bitselect (v128.const f64x2 0 0) (local.get $y)
        (f64x2.lt (local.get $x) (v128.const f64x2 -0x1.74910d52d3051p9 -0x1.74910d52d3051p9))))
      (local.set $y2 (v128.bitselect (v128.const f64x2 0 0) (local.get $y2)
        (f64x2.lt (local.get $x2) (v128.const f64x2 -0x1.74910d52d3051p9 -0x1.74910d52d3051p9))))
      (local.set $y (v128.bitselect (f64x2.add (local.get $x) (local.get $x)) (local.get $y)
        (f64x2.ne (local.get $x) (local.get $x))))
      (local.set $y2 (v128.bitselect (f64x2.add (local.get $x2) (local.get $x2)) (local.get $y2)
        (f64x2.ne (local.get $x2) (local.get $x2))))
      (v128.store64_lane 0 (local.get $out)
        (f32x4.demote_f64x2_zero (f64x2.mul
          (f64x2.div (local.get $glu) (f64x2.add (v128.const f64x2 1 1) (local.get $y)))
          (f64x2.add (local.get $lin) (v128.const f64x2 1 1)))))
      (v128.store64_lane offset=8 0 (local.get $out)
        (f32x4.demote_f64x2_zero (f64x2.mul
          (f64x2.div (local.get $glu2) (f64x2.add (v128.const f64x2 1 1) (local.get $y2)))
          (f64x2.add (local.get $lin2) (v128.const f64x2 1 1)))))
      (local.set $out (i32.add (local.get $out) (i32.const 16)))
      (br_if $pairs (i32.lt_u
        (local.tee $gu (i32.add (local.get $gu) (i32.const 32)))
        (local.get $end)))))

  ;; clamped_swiglu_f32(gu, out, count, limit, alpha): the clamped SwiGLU above in f32, for the
  ;; integer MXFP4 path (mxfp4=int8), which is not exact anyway; ./clamped-swiglu-f32.ts is its
  ;; plain reference (the same bits) and states its error. Four values a step: the gates and the
  ;; linear halves of four pairs to lanes, clamped as above (limit and alpha rounded to f32),
  ;; x = -alpha · glu, then exp(x) as Cephes' expf: x held to [-80, 88] (no subnormals, no
  ;; overflow; infinity above 88 afterwards, a NaN stays), k = x·log2(e) rounded to nearest by
  ;; adding 1.5·2^23, r = (x - k·C1) - k·C2 (k·C1 exact), e^r = 1 + r + r²·P(r) with P of degree
  ;; 5, times 2^k from its exponent bits; out = (glu / (1 + e)) · (lin + 1). Every operation is
  ;; an f32 one, rounded. The constants are locals set before the loop (V8 builds a v128.const
  ;; anew at each use: inline, the loop took 1.6x as long).
  (func (export "clamped_swiglu_f32")
    (param $gu i32) (param $out i32) (param $count i32) (param $limit f64) (param $alpha f64)
    (local $end i32) (local $a v128) (local $b v128) (local $glu v128) (local $lin v128)
    (local $x v128) (local $kf v128) (local $k v128) (local $r v128) (local $e v128)
    (local $hiLimit v128) (local $loLimit v128) (local $negAlpha v128)
    (local $one v128) (local $high v128) (local $low v128) (local $log2e v128) (local $shifter v128)
    (local $ln2Hi v128) (local $ln2Lo v128) (local $p0 v128) (local $p1 v128) (local $p2 v128)
    (local $p3 v128) (local $p4 v128) (local $p5 v128) (local $inf v128) (local $bias v128)
    (if (i32.eqz (local.get $count)) (then (return)))
    (local.set $end (i32.add (local.get $gu) (i32.shl (local.get $count) (i32.const 3))))
    (local.set $hiLimit (f32x4.splat (f32.demote_f64 (local.get $limit))))
    (local.set $loLimit (f32x4.neg (local.get $hiLimit)))
    (local.set $negAlpha (f32x4.splat (f32.neg (f32.demote_f64 (local.get $alpha)))))
    (local.set $one (v128.const f32x4 1 1 1 1))
    (local.set $high (v128.const f32x4 88 88 88 88))
    (local.set $low (v128.const f32x4 -80 -80 -80 -80))
    (local.set $log2e (v128.const f32x4 0x1.715476p+0 0x1.715476p+0 0x1.715476p+0 0x1.715476p+0))
    (local.set $shifter (v128.const f32x4 0x1.8p23 0x1.8p23 0x1.8p23 0x1.8p23))
    (local.set $ln2Hi (v128.const f32x4 0x1.63p-1 0x1.63p-1 0x1.63p-1 0x1.63p-1))
    (local.set $ln2Lo (v128.const f32x4 -0x1.bd0106p-13 -0x1.bd0106p-13 -0x1.bd0106p-13 -0x1.bd0106p-13))
    (local.set $p0 (v128.const f32x4 0x1.a0d2cep-13 0x1.a0d2cep-13 0x1.a0d2cep-13 0x1.a0d2cep-13))
    (local.set $p1 (v128.const f32x4 0x1.6e879cp-10 0x1.6e879cp-10 0x1.6e879cp-10 0x1.6e879cp-10))
    (local.set $p2 (v128.const f32x4 0x1.11121p-7 0x1.11121p-7 0x1.11121p-7 0x1.11121p-7))
    (local.set $p3 (v128.const f32x4 0x1.555382p-5 0x1.555382p-5 0x1.555382p-5 0x1.555382p-5))
    (local.set $p4 (v128.const f32x4 0x1.555554p-3 0x1.555554p-3 0x1.555554p-3 0x1.555554p-3))
    (local.set $p5 (v128.const f32x4 0x1p-1 0x1p-1 0x1p-1 0x1p-1))
    (local.set $inf (v128.const f32x4 inf inf inf inf))
    ;; 127 - 0x4b400000: added to kf's bits (0x4b400000 + k), k + 127, 2^k's exponent field.
    (local.set $bias (v128.const i32x4 -0x4b3fff81 -0x4b3fff81 -0x4b3fff81 -0x4b3fff81))
    (loop $quads
      (local.set $a (v128.load (local.get $gu)))
      (local.set $b (v128.load offset=16 (local.get $gu)))
      (local.set $glu (f32x4.pmin
        (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a) (local.get $b))
        (local.get $hiLimit)))
      (local.set $lin (f32x4.pmin (f32x4.pmax
        (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a) (local.get $b))
        (local.get $loLimit)) (local.get $hiLimit)))
      (local.set $x (f32x4.mul (local.get $negAlpha) (local.get $glu)))
      (local.set $r (f32x4.pmax (f32x4.pmin (local.get $x) (local.get $high)) (local.get $low)))
      (local.set $kf (f32x4.add (f32x4.mul (local.get $r) (local.get $log2e)) (local.get $shifter)))
      (local.set $k (f32x4.sub (local.get $kf) (local.get $shifter)))
      (local.set $r (f32x4.sub
        (f32x4.sub (local.get $r) (f32x4.mul (local.get $k) (local.get $ln2Hi)))
        (f32x4.mul (local.get $k) (local.get $ln2Lo))))
      (local.set $e (f32x4.add (f32x4.mul
        (f32x4.add (f32x4.mul
        (f32x4.add (f32x4.mul
        (f32x4.add (f32x4.mul
        (f32x4.add (f32x4.mul (local.get $p0)
          (local.get $r)) (local.get $p1))
          (local.get $r)) (local.get $p2))
          (local.get $r)) (local.get $p3))
          (local.get $r)) (local.get $p4))
          (local.get $r)) (local.get $p5)))
      (local.set $e (f32x4.add (f32x4.add
        (f32x4.mul (local.get $e) (f32x4.mul (local.get $r) (local.get $r)))
        (local.get $r)) (local.get $one)))
      (local.set $e (f32x4.mul (local.get $e)
        (i32x4.shl (i32x4.add (local.get $kf) (local.get $bias)) (i32.const 23))))
      (local.set $e (v128.bitselect (local.get $inf) (local.get $e)
        (f32x4.gt (local.get $x) (local.get $high))))
      (v128.store (local.get $out)
        (f32x4.mul
          (f32x4.div (local.get $glu) (f32x4.add (local.get $one) (local.get $e)))
          (f32x4.add (local.get $lin) (local.get $one))))
      (local.set $out (i32.add (local.get $out) (i32.const 16)))
      (br_if $quads (i32.lt_u
        (local.tee $gu (i32.add (local.get $gu) (i32.const 32)))
        (local.get $end))))))
