/** One layer's attention over a step's tokens, apart from the arrays it reads and writes. */
export interface AttentionStep {
  /** Per token: position, first visible position, offset of its block table in `tables`. */
  readonly meta: Int32Array;
  readonly tables: Int32Array;
  readonly blockSize: number;
  /** Blocks of a ring (a window kept as a ring), or 0 for none. */
  readonly ringBlocks: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly vHeadDim: number;
  readonly scale: number;
  readonly sinks: Float32Array | null;
  /** Queries of one sequence taken together, each key/value row read once for all. */
  readonly tile: number;
}

/** The queries, outputs and KV cache attention reads and writes. */
export interface AttentionRows {
  readonly q: Float32Array;
  readonly out: Float32Array;
  readonly keys: Float32Array;
  readonly values: Float32Array;
}

/** The attention kernels' growable working arrays, one set per thread. */
export interface AttentionScratch {
  scores: Float64Array;
  acc: Float64Array;
  slots: Int32Array;
}

/**
 * The fast attention kernel: grouped-query attention of tokens [t0, t1) of a step over a paged
 * cache. The pool's worker threads (kernels/worker.ts) run it too, splitting a step's tokens.
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
  step: AttentionStep,
  rows: AttentionRows,
  t0: number,
  t1: number,
  scratch: AttentionScratch,
): void {
  const { meta, tables, blockSize, ringBlocks, tile, numHeads, numKvHeads, headDim, vHeadDim, scale, sinks } =
    step;
  const { q, out, keys, values } = rows;
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

/** attention.wat's dot4 / dot3 / dot1 (see there): scaled dot products of query rows with key rows. */
type DotRows = (
  q: number,
  qs: number,
  k: number,
  ks: number,
  np: number,
  hd: number,
  s: number,
  ss: number,
  scale: number,
) => void;

/** The attention module's exports (attention.wat) and this thread's region of the shared memory. */
export interface AttentionSimd {
  dot4: DotRows;
  dot3: DotRows;
  dot1: DotRows;
  vacc2: (
    w: number,
    ws: number,
    a: number,
    as: number,
    v: number,
    vs: number,
    np: number,
    vd: number,
  ) => void;
  vacc1: (
    w: number,
    ws: number,
    a: number,
    as: number,
    v: number,
    vs: number,
    np: number,
    vd: number,
  ) => void;
  widen: (src: number, dst: number, n: number) => void;
  narrow: (src: number, dst: number, n: number) => void;
  softmax2: (s0: number, s1: number, n: number, sinks: number, sink0: number, sink1: number) => void;
  /** exp of n (even) f64 values, Math.exp's bits (the fdlibm port attention.wat takes from swiglu.wat). */
  exps: (src: number, dst: number, n: number) => void;
  memory: { readonly buffer: ArrayBufferLike };
  base: number;
  bytes: number;
}

/** Positions whose keys (then values) are copied into the SIMD region at a time. */
export const SIMD_POSITION_BLOCK = 128;

/**
 * Bytes of SIMD region attendTokensSimd needs for tiles of `tile` queries whose spans reach
 * `maxSpan` positions (the longest visible range plus tile - 1): the tile's f32 queries and outputs
 * as they arrive and leave, its f64 queries, one block of keys and values, the f64 accumulators,
 * and the f64 scores (capped: past the cap tiles shrink).
 */
export function attentionSimdBytes(
  tile: number,
  numHeads: number,
  numKvHeads: number,
  headDim: number,
  vHeadDim: number,
  maxSpan: number,
): number {
  const fixed =
    12 * tile * numHeads * (headDim + vHeadDim) + 4 * SIMD_POSITION_BLOCK * numKvHeads * (headDim + vHeadDim);
  const scores = Math.min(tile * numHeads * maxSpan, Math.max(1 << 22, numHeads * maxSpan));
  return fixed + 8 * scores + 64;
}

/**
 * attendTokens with its loops in WebAssembly SIMD (f64x2 lanes doing the reference's f64
 * operations in its order, so the bits are the same; the softmax's exp is Math.exp's fdlibm, ported).
 * Needs headDim % 4 == 0 and vHeadDim % 8 == 0. Per tile: queries copied into the region and widened
 * to f64; then per block of positions, keys copied in (resolving the block table) and each visible
 * (query row, position) dotted; the softmax of rows two at a time; then values block by block,
 * accumulated per row in ascending positions (rows in pairs over their common positions); then the
 * outputs narrowed to f32 in the region and copied out. A tile that does not fit the region runs
 * through attendTokens.
 */
export function attendTokensSimd(
  step: AttentionStep,
  rows: AttentionRows,
  t0: number,
  t1: number,
  scratch: AttentionScratch,
  simd: AttentionSimd,
  positionBlock: number = SIMD_POSITION_BLOCK,
): void {
  const { meta, tables, blockSize, ringBlocks, tile, numHeads, numKvHeads, headDim, vHeadDim, scale, sinks } =
    step;
  const { q, out, keys, values } = rows;
  const group = numHeads / numKvHeads;
  const keyStride = numKvHeads * headDim;
  const valueStride = numKvHeads * vHeadDim;
  // Region layout (bytes from simd.base): f32 queries, f32 outputs, f64 queries, f32 key block,
  // f32 value block, f64 accumulators, f64 scores.
  const qInOff = simd.base;
  const outOff = qInOff + 4 * tile * numHeads * headDim;
  const qOff = outOff + 4 * tile * numHeads * vHeadDim;
  const kOff = qOff + 8 * tile * numHeads * headDim;
  const vOff = kOff + 4 * positionBlock * keyStride;
  const accOff = vOff + 4 * positionBlock * valueStride;
  const sOff = (accOff + 8 * tile * numHeads * vHeadDim + 15) & ~15;
  const scoresRoom = Math.floor((simd.base + simd.bytes - sOff) / 8);
  const buffer = simd.memory.buffer;
  const F = new Float64Array(buffer);
  const kBuf = new Float32Array(buffer, kOff, positionBlock * keyStride);
  const vBuf = new Float32Array(buffer, vOff, positionBlock * valueStride);
  const qIn = new Float32Array(buffer, qInOff, tile * numHeads * headDim);
  const outTile = new Float32Array(buffer, outOff, tile * numHeads * vHeadDim);
  const { dot4, dot3, dot1, vacc2, vacc1, widen, narrow, softmax2 } = simd;
  for (let t = t0; t < t1; ) {
    const pos0 = meta[3 * t] as number;
    const tableOffset = meta[3 * t + 2] as number;
    let J = 1;
    while (J < tile && t + J < t1 && meta[3 * (t + J) + 2] === tableOffset && meta[3 * (t + J)] === pos0 + J)
      J++;
    let lo = 0;
    let span = 0;
    for (;;) {
      lo = meta[3 * t + 1] as number;
      for (let j = 1; j < J; j++) lo = Math.min(lo, meta[3 * (t + j) + 1] as number);
      span = pos0 + J - lo;
      if (numHeads * J * span <= scoresRoom || J === 1) break;
      J = Math.ceil(J / 2);
    }
    if (numHeads * J * span > scoresRoom) {
      attendTokens(step, rows, t, t + 1, scratch);
      t += 1;
      continue;
    }
    const R = J * group;
    if (scratch.slots.length < span) scratch.slots = new Int32Array(Math.max(span, 2 * scratch.slots.length));
    const slots = scratch.slots;
    for (let i = 0; i < span; ) {
      const p = lo + i;
      let b = Math.floor(p / blockSize);
      if (ringBlocks > 0) b %= ringBlocks;
      const base = (tables[tableOffset + b] as number) * blockSize + (p % blockSize);
      const run = Math.min(span - i, blockSize - (p % blockSize));
      for (let j = 0; j < run; j++) slots[i + j] = base + j;
      i += run;
    }
    // Queries as f64 rows [kvh][j * group + g][d]: each (j, kvh)'s group of rows is contiguous.
    qIn.set(q.subarray(t * numHeads * headDim, (t + J) * numHeads * headDim));
    for (let j = 0; j < J; j++)
      for (let kvh = 0; kvh < numKvHeads; kvh++)
        widen(
          qInOff + 4 * (j * numHeads + kvh * group) * headDim,
          qOff + 8 * (kvh * J + j) * group * headDim,
          group * headDim,
        );
    // Row r = j * group + g sees scores columns [first_j - lo, pos0 + j - lo + 1).
    const rowFrom = (r: number) => (meta[3 * (t + Math.floor(r / group)) + 1] as number) - lo;
    const rowTo = (r: number) => pos0 + Math.floor(r / group) - lo + 1;
    const sRow = (kvh: number, r: number) => sOff + 8 * (kvh * R + r) * span;
    const copy = (dst: Float32Array, src: Float32Array, stride: number, b0: number, b1: number) => {
      for (let i = b0; i < b1; ) {
        const slot = slots[i] as number;
        let run = 1;
        while (i + run < b1 && slots[i + run] === slot + run) run++;
        dst.set(src.subarray(slot * stride, (slot + run) * stride), (i - b0) * stride);
        i += run;
      }
    };
    for (let b0 = 0; b0 < span; b0 += positionBlock) {
      const b1 = Math.min(span, b0 + positionBlock);
      copy(kBuf, keys, keyStride, b0, b1);
      for (let kvh = 0; kvh < numKvHeads; kvh++) {
        const kBase = kOff + 4 * kvh * headDim;
        // Rows four at a time, or three where R is a multiple of 3 and not 4 (a decode step with
        // three query heads a KV head): each key row is read once for the rows taken together.
        const rowsAtOnce = R % 4 !== 0 && R % 3 === 0 ? 3 : 4;
        const dotRows = rowsAtOnce === 4 ? dot4 : dot3;
        let r = 0;
        for (; r + rowsAtOnce <= R; r += rowsAtOnce) {
          let first = rowFrom(r);
          for (let i = 1; i < rowsAtOnce; i++) first = Math.min(first, rowFrom(r + i));
          const from = Math.max(b0, first);
          const to = Math.min(b1, rowTo(r + rowsAtOnce - 1));
          if (from < to)
            dotRows(
              qOff + 8 * (kvh * R + r) * headDim,
              8 * headDim,
              kBase + 4 * (from - b0) * keyStride,
              4 * keyStride,
              to - from,
              headDim,
              sRow(kvh, r) + 8 * from,
              8 * span,
              scale,
            );
        }
        for (; r < R; r++) {
          const from = Math.max(b0, rowFrom(r));
          const to = Math.min(b1, rowTo(r));
          if (from < to)
            dot1(
              qOff + 8 * (kvh * R + r) * headDim,
              0,
              kBase + 4 * (from - b0) * keyStride,
              4 * keyStride,
              to - from,
              headDim,
              sRow(kvh, r) + 8 * from,
              0,
              scale,
            );
        }
      }
    }
    // Softmax of each row over its own positions, leaving the weights in place: rows f = kvh * R + r
    // in pairs where both see the same positions (rows of one query do), else alone.
    const sinkOf = (f: number) =>
      sinks === null ? 0 : (sinks[Math.floor(f / R) * group + ((f % R) % group)] as number);
    for (let f = 0; f < numKvHeads * R; ) {
      const from = rowFrom(f % R);
      const to = rowTo(f % R);
      const paired = f + 1 < numKvHeads * R && rowFrom((f + 1) % R) === from && rowTo((f + 1) % R) === to;
      const f1 = paired ? f + 1 : f;
      softmax2(
        sRow(0, f) + 8 * from,
        sRow(0, f1) + 8 * from,
        to - from,
        sinks === null ? 0 : 1,
        sinkOf(f),
        sinkOf(f1),
      );
      f = f1 + 1;
    }
    const aRow = (kvh: number, r: number) => accOff + 8 * (kvh * R + r) * vHeadDim;
    F.fill(0, accOff / 8, accOff / 8 + numKvHeads * R * vHeadDim);
    const one = (kvh: number, r: number, from: number, to: number, vBase: number, b0: number) => {
      if (from < to)
        vacc1(
          sRow(kvh, r) + 8 * from,
          0,
          aRow(kvh, r),
          0,
          vBase + 4 * (from - b0) * valueStride,
          4 * valueStride,
          to - from,
          vHeadDim,
        );
    };
    for (let b0 = 0; b0 < span; b0 += positionBlock) {
      const b1 = Math.min(span, b0 + positionBlock);
      copy(vBuf, values, valueStride, b0, b1);
      for (let kvh = 0; kvh < numKvHeads; kvh++) {
        const vBase = vOff + 4 * kvh * vHeadDim;
        let r = 0;
        for (; r + 2 <= R; r += 2) {
          // Each row keeps ascending positions: its part before the common range, the common range
          // (both rows at once), its part after.
          const f0 = Math.max(b0, rowFrom(r));
          const e0 = Math.min(b1, rowTo(r));
          const f1 = Math.max(b0, rowFrom(r + 1));
          const e1 = Math.min(b1, rowTo(r + 1));
          const m = Math.max(f0, f1);
          const e = Math.min(e0, e1);
          if (m < e) {
            one(kvh, r, f0, m, vBase, b0);
            one(kvh, r + 1, f1, m, vBase, b0);
            vacc2(
              sRow(kvh, r) + 8 * m,
              8 * span,
              aRow(kvh, r),
              8 * vHeadDim,
              vBase + 4 * (m - b0) * valueStride,
              4 * valueStride,
              e - m,
              vHeadDim,
            );
            one(kvh, r, e, e0, vBase, b0);
            one(kvh, r + 1, e, e1, vBase, b0);
          } else {
            one(kvh, r, f0, e0, vBase, b0);
            one(kvh, r + 1, f1, e1, vBase, b0);
          }
        }
        if (r < R) one(kvh, r, Math.max(b0, rowFrom(r)), Math.min(b1, rowTo(r)), vBase, b0);
      }
    }
    for (let j = 0; j < J; j++)
      for (let kvh = 0; kvh < numKvHeads; kvh++)
        narrow(aRow(kvh, j * group), outOff + 4 * (j * numHeads + kvh * group) * vHeadDim, group * vHeadDim);
    out.set(outTile.subarray(0, J * numHeads * vHeadDim), t * numHeads * vHeadDim);
    t += J;
  }
}
