/**
 * The fast attention kernel: grouped-query attention of tokens [t0, t1) of a step over a paged
 * cache. Self-contained (no imports, no outer variables) because its source also runs inside the
 * matmul pool's worker threads, which split a step's tokens between them.
 *
 * Per token t, meta[3t..3t+2] = [pos, first visible position, offset of its block table in
 * `tables`]. A position p lives in slot table[b] * blockSize + p % blockSize with
 * b = floor(p / blockSize), taken mod ringBlocks when ringBlocks > 0 (a window kept as a ring).
 * Each key is read once for the query heads that share it; each token's result depends only on
 * its own sequence, whichever thread computes it.
 */
export function attendTokens(
  t0: number,
  t1: number,
  meta: Int32Array,
  tables: Int32Array,
  blockSize: number,
  ringBlocks: number,
  q: Float32Array,
  out: Float32Array,
  keys: Float32Array,
  values: Float32Array,
  numHeads: number,
  numKvHeads: number,
  headDim: number,
  vHeadDim: number,
  scale: number,
  sinks: Float32Array | null,
  scratch: { scores: Float64Array; acc: Float64Array; slots: Int32Array },
): void {
  const group = numHeads / numKvHeads;
  const keyStride = numKvHeads * headDim;
  const valueStride = numKvHeads * vHeadDim;
  const hd4 = headDim - (headDim % 4);
  if (scratch.acc.length < vHeadDim) scratch.acc = new Float64Array(vHeadDim);
  const acc = scratch.acc;
  for (let t = t0; t < t1; t++) {
    const pos = meta[3 * t] as number;
    const first = meta[3 * t + 1] as number;
    const tableOffset = meta[3 * t + 2] as number;
    const n = pos - first + 1;
    if (scratch.slots.length < n) scratch.slots = new Int32Array(Math.max(n, 2 * scratch.slots.length));
    if (scratch.scores.length < n * group)
      scratch.scores = new Float64Array(Math.max(n * group, 2 * scratch.scores.length));
    const slots = scratch.slots;
    const scores = scratch.scores;
    for (let i = 0; i < n; ) {
      const p = first + i;
      let b = Math.floor(p / blockSize);
      if (ringBlocks > 0) b %= ringBlocks;
      const base = (tables[tableOffset + b] as number) * blockSize + (p % blockSize);
      const run = Math.min(n - i, blockSize - (p % blockSize));
      for (let j = 0; j < run; j++) slots[i + j] = base + j;
      i += run;
    }
    const qBase = t * numHeads * headDim;
    const oBase = t * numHeads * vHeadDim;
    for (let kvh = 0; kvh < numKvHeads; kvh++) {
      for (let i = 0; i < n; i++) {
        const ko = (slots[i] as number) * keyStride + kvh * headDim;
        for (let g = 0; g < group; g++) {
          const qo = qBase + (kvh * group + g) * headDim;
          let s0 = 0;
          let s1 = 0;
          let s2 = 0;
          let s3 = 0;
          let d = 0;
          for (; d < hd4; d += 4) {
            s0 += (q[qo + d] as number) * (keys[ko + d] as number);
            s1 += (q[qo + d + 1] as number) * (keys[ko + d + 1] as number);
            s2 += (q[qo + d + 2] as number) * (keys[ko + d + 2] as number);
            s3 += (q[qo + d + 3] as number) * (keys[ko + d + 3] as number);
          }
          let s = s0 + s1 + (s2 + s3);
          for (; d < headDim; d++) s += (q[qo + d] as number) * (keys[ko + d] as number);
          scores[g * n + i] = s * scale;
        }
      }
      for (let g = 0; g < group; g++) {
        const h = kvh * group + g;
        const o = g * n;
        let max = sinks === null ? Number.NEGATIVE_INFINITY : (sinks[h] as number);
        for (let i = 0; i < n; i++) max = Math.max(max, scores[o + i] as number);
        let sum = sinks === null ? 0 : Math.exp((sinks[h] as number) - max);
        for (let i = 0; i < n; i++) {
          const e = Math.exp((scores[o + i] as number) - max);
          scores[o + i] = e;
          sum += e;
        }
        const inv = 1 / sum;
        acc.fill(0, 0, vHeadDim);
        for (let i = 0; i < n; i++) {
          const w = (scores[o + i] as number) * inv;
          const vo = (slots[i] as number) * valueStride + kvh * vHeadDim;
          for (let d = 0; d < vHeadDim; d++) acc[d] = (acc[d] as number) + w * (values[vo + d] as number);
        }
        const oo = oBase + h * vHeadDim;
        for (let d = 0; d < vHeadDim; d++) out[oo + d] = acc[d] as number;
      }
    }
  }
}
