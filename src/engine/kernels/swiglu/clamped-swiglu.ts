import { type ClampedArithmetic, clampedValueF32 } from "./clamped-swiglu-f32.js";

/**
 * gpt-oss's clamped SwiGLU on an expert's gate_up output [n, 2I], whose gate and linear halves are
 * interleaved (even and odd columns): glu = min(gate, limit), lin = clamp(lin, -limit, limit),
 * out = glu · sigmoid(alpha · glu) · (lin + 1), [n, I] (a new array unless `out` is given). Each
 * value in float64 with Math.exp, rounded once; in `arithmetic` "f32", the integer MXFP4 path's,
 * every operation in f32 as ./clamped-swiglu-f32.ts states. The pool runs swiglu.wat's
 * clamped_swiglu (clamped_swiglu_f32) instead (the same bits) where it has SIMD.
 */
export function clampedSwiglu(
  gateUp: Float32Array,
  n: number,
  I: number,
  limit: number,
  alpha: number,
  out: Float32Array = new Float32Array(n * I),
  arithmetic: ClampedArithmetic = "f64",
): Float32Array {
  const f32 = arithmetic === "f32";
  const hi = f32 ? Math.fround(limit) : limit;
  const value = f32
    ? clampedValueF32(alpha)
    : (glu: number, lin: number) => (glu / (1 + Math.exp(-alpha * glu))) * (lin + 1);
  for (let t = 0; t < n; t++) {
    for (let i = 0; i < I; i++) {
      const glu = Math.min(gateUp[t * 2 * I + 2 * i] as number, hi);
      const lin = Math.min(Math.max(gateUp[t * 2 * I + 2 * i + 1] as number, -hi), hi);
      out[t * I + i] = value(glu, lin);
    }
  }
  return out;
}
