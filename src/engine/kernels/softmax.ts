/**
 * In place softmax over x[offset, offset+n); `sink` (a logit) joins the denominator without
 * receiving weight, as attention sinks do. Returns nothing: the slice now sums to 1 - sink share.
 */
export function softmax(x: Float32Array | Float64Array, offset: number, n: number, sink?: number): void {
  let max = sink ?? Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) max = Math.max(max, x[offset + i] as number);
  let sum = sink === undefined ? 0 : Math.exp(sink - max);
  for (let i = 0; i < n; i++) {
    const e = Math.exp((x[offset + i] as number) - max);
    x[offset + i] = e;
    sum += e;
  }
  const inv = 1 / sum;
  for (let i = 0; i < n; i++) x[offset + i] = (x[offset + i] as number) * inv;
}

/** log softmax of x[0, n) into out (f64 for accurate logprobs). */
export function logSoftmax(x: Float32Array, offset: number, n: number, out: Float64Array): void {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) max = Math.max(max, x[offset + i] as number);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp((x[offset + i] as number) - max);
  const lse = max + Math.log(sum);
  for (let i = 0; i < n; i++) out[i] = (x[offset + i] as number) - lse;
}
