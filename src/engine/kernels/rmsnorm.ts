/** In place over `rows` rows of `dim`: x = x / sqrt(mean(x²) + eps) * weight. */
export function rmsNorm(
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
