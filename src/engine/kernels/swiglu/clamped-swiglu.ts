/**
 * gpt-oss's clamped SwiGLU on an expert's gate_up output [n, 2I], whose gate and linear halves are
 * interleaved (even and odd columns): glu = min(gate, limit), lin = clamp(lin, -limit, limit),
 * out = glu · sigmoid(alpha · glu) · (lin + 1), [n, I] (a new array unless `out` is given). Each
 * value in float64 with Math.exp, rounded once. The pool runs swiglu.wat's clamped_swiglu instead
 * (the same bits) where it has SIMD.
 */
export function clampedSwiglu(
  gateUp: Float32Array,
  n: number,
  I: number,
  limit: number,
  alpha: number,
  out: Float32Array = new Float32Array(n * I),
): Float32Array {
  for (let t = 0; t < n; t++) {
    for (let i = 0; i < I; i++) {
      const glu = Math.min(gateUp[t * 2 * I + 2 * i] as number, limit);
      const lin = Math.min(Math.max(gateUp[t * 2 * I + 2 * i + 1] as number, -limit), limit);
      out[t * I + i] = (glu / (1 + Math.exp(-alpha * glu))) * (lin + 1);
    }
  }
  return out;
}
