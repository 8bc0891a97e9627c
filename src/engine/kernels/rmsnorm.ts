import { vectorKernels } from "./vector/vector-ops.js";

/**
 * Over `rows` rows of `dim` (in place by default): out = x / sqrt(mean(x²) + eps) * weight. Where
 * x, out and weight lie in the kernels' shared memory, vector.wat's rms_norm (several rows' sums at
 * once, where one row's is a serial chain); else rmsNormPlain. The same bits.
 */
export function rmsNorm(...args: Parameters<typeof rmsNormPlain>): void {
  const [x, rows, dim, weight, eps, out = x] = args;
  const k = vectorKernels();
  if (k !== null) {
    const [xAt, outAt, wAt] = [k.arena.offsetOf(x), k.arena.offsetOf(out), k.arena.offsetOf(weight)];
    if (xAt >= 0 && outAt >= 0 && wAt >= 0) {
      k.simd.rms_norm(xAt, outAt, wAt, rows, dim, eps);
      return;
    }
  }
  rmsNormPlain(x, rows, dim, weight, eps, out);
}

/** rmsNorm's plain loops (its reference). */
export function rmsNormPlain(
  x: Float32Array,
  rows: number,
  dim: number,
  weight: Float32Array,
  eps: number,
  out: Float32Array = x,
): void {
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let ss = 0;
    for (let i = 0; i < dim; i++) {
      const v = x[o + i] as number;
      ss += v * v;
    }
    const inv = 1 / Math.sqrt(ss / dim + eps);
    for (let i = 0; i < dim; i++) out[o + i] = (x[o + i] as number) * inv * (weight[i] as number);
  }
}
