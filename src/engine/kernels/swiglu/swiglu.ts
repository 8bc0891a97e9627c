/**
 * gate = silu(gate) * up, elementwise over n values, in f64 with Math.exp and rounded to f32 once.
 * The pool runs swiglu.wat instead where it runs the SIMD matmul tile.
 */
export function swiglu(gate: Float32Array, up: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const g = gate[i] as number;
    gate[i] = (g / (1 + Math.exp(-g))) * (up[i] as number);
  }
}
