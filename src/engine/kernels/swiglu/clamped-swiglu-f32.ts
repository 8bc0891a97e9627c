/** A clamped SwiGLU's arithmetic: f64 rounded once (./clamped-swiglu.ts, exact) or f32 (this file's). */
export type ClampedArithmetic = "f64" | "f32";

const f32 = Math.fround;
/** 1.5 · 2^23: added to a float below 2^22 in magnitude, it rounds it to an integer (to even). */
const SHIFTER = 12582912;
const LOG2E = f32(Math.LOG2E);
/** ln 2 in two parts (Cephes' expf): k · LN2_HI is exact for the k reached, LN2_LO is rounded. */
const LN2_HI = 0.693359375;
const LN2_LO = f32(-2.1219444e-4);
/** e^r ≈ 1 + r + r² · P(r) on |r| ≤ ln2 / 2 (Cephes' expf), highest degree first. */
const P = [
  1.98756915e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1,
].map(f32);

/**
 * exp(x) of an f32 x in f32 as swiglu.wat's clamped_swiglu_f32 computes it (every step rounded to
 * f32): x held to [-80, 88], x = k·ln2 + r, e^r by P, times 2^k; infinity above 88, NaN for NaN.
 * Within 2 ulp of e^x on [-80, 88] (clamped-swiglu-f32.test.ts).
 */
export function expF32(x: number): number {
  const held = Math.max(Math.min(x, 88), -80);
  const k = f32(f32(held * LOG2E) + SHIFTER) - SHIFTER;
  const r = f32(f32(held - k * LN2_HI) - f32(k * LN2_LO));
  let p = P[0] as number;
  for (let j = 1; j < P.length; j++) p = f32(f32(p * r) + (P[j] as number));
  const e = f32(f32(f32(p * f32(r * r)) + r) + 1);
  return x > 88 ? Number.POSITIVE_INFINITY : f32(e * 2 ** k);
}

/**
 * gpt-oss's clamped SwiGLU's value (./clamped-swiglu.ts) in f32 arithmetic, for the integer MXFP4
 * path (`mxfp4=int8`), whose outputs are not the exact path's anyway: of glu and lin already
 * clamped (limit rounded to f32), (glu / (1 + expF32(-alpha · glu))) · (lin + 1) with alpha rounded
 * to f32 and each operation rounded to f32. swiglu.wat's clamped_swiglu_f32 gives the same bits
 * four values at a time. Against the f64 form: within (|alpha · glu| + 8) · 2^-23 of it relative
 * to its size (rounding -alpha · glu to f32 moves the exp by up to |alpha · glu| · 2^-24), or
 * 2^-110 where exp overflows f32 (clamped-swiglu-f32.test.ts).
 */
export function clampedValueF32(alpha: number): (glu: number, lin: number) => number {
  const negAlpha = -f32(alpha);
  return (glu, lin) => f32(f32(glu / f32(1 + expF32(f32(negAlpha * glu)))) * f32(lin + 1));
}
