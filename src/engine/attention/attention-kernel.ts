/**
 * The fast attention kernel: grouped-query attention of tokens [t0, t1) of a step over a paged
 * cache. Self-contained (no imports, no outer variables) because its source also runs inside the
 * matmul pool's worker threads, which split a step's tokens between them.
 *
 * Per token t, meta[3t..3t+2] = [pos, first visible position, offset of its block table in
 * `tables`]. A position p lives in slot table[b] * blockSize + p % blockSize with
 * b = floor(p / blockSize), taken mod ringBlocks when ringBlocks > 0 (a window kept as a ring).
 *
 * Consecutive tokens of one sequence (same table, positions one apart: a prefill chunk) form a
 * tile of up to `tile` queries, so each key and value row is read from memory once per tile rather
 * than once per query, and once for the query heads that share it. Each query still sees exactly
 * the scalar reference's arithmetic (paged-attention.ts): the same four-accumulator dot per
 * position, the f64 softmax with its sink, and the weighted values summed over positions in
 * ascending order. So its bits depend only on its own sequence, whichever tile or thread it lands in.
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
  tile = 32,
): void {
  const group = numHeads / numKvHeads;
  const keyStride = numKvHeads * headDim;
  const valueStride = numKvHeads * vHeadDim;
  const hd4 = headDim - (headDim % 4);
  for (let t = t0; t < t1; ) {
    const pos0 = meta[3 * t] as number;
    const tableOffset = meta[3 * t + 2] as number;
    let lo = meta[3 * t + 1] as number;
    let J = 1;
    while (
      J < tile &&
      t + J < t1 &&
      meta[3 * (t + J) + 2] === tableOffset &&
      meta[3 * (t + J)] === pos0 + J
    ) {
      lo = Math.min(lo, meta[3 * (t + J) + 1] as number);
      J++;
    }
    const hi = pos0 + J - 1;
    const span = hi - lo + 1;
    const rows = J * group;
    if (scratch.slots.length < span) scratch.slots = new Int32Array(Math.max(span, 2 * scratch.slots.length));
    if (scratch.scores.length < rows * span)
      scratch.scores = new Float64Array(Math.max(rows * span, 2 * scratch.scores.length));
    if (scratch.acc.length < rows * vHeadDim) scratch.acc = new Float64Array(rows * vHeadDim);
    const slots = scratch.slots;
    const scores = scratch.scores;
    const acc = scratch.acc;
    // Slots of consecutive positions are consecutive within a block: look the block up once per block.
    for (let i = 0; i < span; ) {
      const p = lo + i;
      let b = Math.floor(p / blockSize);
      if (ringBlocks > 0) b %= ringBlocks;
      const base = (tables[tableOffset + b] as number) * blockSize + (p % blockSize);
      const run = Math.min(span - i, blockSize - (p % blockSize));
      for (let j = 0; j < run; j++) slots[i + j] = base + j;
      i += run;
    }
    for (let kvh = 0; kvh < numKvHeads; kvh++) {
      // Scores: row (j * group + g) holds query j's head kvh * group + g at columns p - lo.
      for (let i = 0; i < span; i++) {
        const p = lo + i;
        const ko = (slots[i] as number) * keyStride + kvh * headDim;
        for (let j = p > pos0 ? p - pos0 : 0; j < J; j++) {
          if (p < (meta[3 * (t + j) + 1] as number)) continue;
          const qBase = (t + j) * numHeads * headDim;
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
            scores[(j * group + g) * span + i] = s * scale;
          }
        }
      }
      // Softmax of each row over its own positions, leaving the weights in place.
      for (let j = 0; j < J; j++) {
        const i0 = (meta[3 * (t + j) + 1] as number) - lo;
        const i1 = pos0 + j - lo + 1;
        for (let g = 0; g < group; g++) {
          const sink = sinks === null ? 0 : (sinks[kvh * group + g] as number);
          const o = (j * group + g) * span;
          let max = sinks === null ? Number.NEGATIVE_INFINITY : sink;
          for (let i = i0; i < i1; i++) max = Math.max(max, scores[o + i] as number);
          let sum = sinks === null ? 0 : Math.exp(sink - max);
          for (let i = i0; i < i1; i++) {
            const e = Math.exp((scores[o + i] as number) - max);
            scores[o + i] = e;
            sum += e;
          }
          const inv = 1 / sum;
          for (let i = i0; i < i1; i++) scores[o + i] = (scores[o + i] as number) * inv;
        }
      }
      acc.fill(0, 0, rows * vHeadDim);
      for (let i = 0; i < span; i++) {
        const p = lo + i;
        const vo = (slots[i] as number) * valueStride + kvh * vHeadDim;
        for (let j = p > pos0 ? p - pos0 : 0; j < J; j++) {
          if (p < (meta[3 * (t + j) + 1] as number)) continue;
          for (let g = 0; g < group; g++) {
            const r = j * group + g;
            const w = scores[r * span + i] as number;
            const a = r * vHeadDim;
            for (let d = 0; d < vHeadDim; d++)
              acc[a + d] = (acc[a + d] as number) + w * (values[vo + d] as number);
          }
        }
      }
      for (let j = 0; j < J; j++) {
        const oBase = (t + j) * numHeads * vHeadDim;
        for (let g = 0; g < group; g++) {
          const a = (j * group + g) * vHeadDim;
          const oo = oBase + (kvh * group + g) * vHeadDim;
          for (let d = 0; d < vHeadDim; d++) out[oo + d] = acc[a + d] as number;
        }
      }
    }
    t += J;
  }
}
