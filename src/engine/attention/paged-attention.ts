import type { LayerKvCache } from "../cache/kv-cache.js";
import { softmax } from "../kernels/softmax.js";

/** What one query token needs to attend over its sequence's cached keys and values. */
export interface AttentionQuery {
  /** Query heads, numHeads * headDim values at qOffset. */
  readonly q: Float32Array;
  readonly qOffset: number;
  /** The sequence's block table for this layer's cache group. */
  readonly blocks: readonly number[];
  /** The query's position; positions up to it (within the spec's visibility) are attended. */
  readonly pos: number;
  readonly out: Float32Array;
  readonly outOffset: number;
}

export interface AttentionParams {
  readonly numHeads: number;
  readonly scale: number;
  /** Per-head sink logits, or undefined for none. */
  readonly sinks?: Float32Array;
}

/**
 * Grouped-query attention of one token over a paged cache: each group of numHeads/numKvHeads query
 * heads shares one key/value head. Scores are summed position by position in a fixed order, so the
 * result depends only on the sequence itself, not on what else is in the batch.
 */
export function pagedAttention(
  query: AttentionQuery,
  cache: LayerKvCache,
  params: AttentionParams,
  scratch: AttentionScratch,
): void {
  const { q, qOffset, blocks, pos, out, outOffset } = query;
  const { numHeads, scale, sinks } = params;
  const { headDim, vHeadDim, numKvHeads, keys, values, keyStride, valueStride } = cache;
  const first = cache.spec.firstVisible(pos);
  const n = pos - first + 1;
  const slots = scratch.slots(n);
  for (let i = 0; i < n; i++) slots[i] = cache.slot(blocks, first + i);
  const scores = scratch.scores(n);
  const group = numHeads / numKvHeads;
  for (let h = 0; h < numHeads; h++) {
    const kvh = Math.floor(h / group);
    const qo = qOffset + h * headDim;
    for (let i = 0; i < n; i++) {
      const ko = (slots[i] as number) * keyStride + kvh * headDim;
      let s = 0;
      for (let d = 0; d < headDim; d++) s += (q[qo + d] as number) * (keys[ko + d] as number);
      scores[i] = s * scale;
    }
    softmax(scores, 0, n, sinks === undefined ? undefined : (sinks[h] as number));
    const oo = outOffset + h * vHeadDim;
    for (let d = 0; d < vHeadDim; d++) out[oo + d] = 0;
    const acc = scratch.acc(vHeadDim);
    acc.fill(0);
    for (let i = 0; i < n; i++) {
      const w = scores[i] as number;
      const vo = (slots[i] as number) * valueStride + kvh * vHeadDim;
      for (let d = 0; d < vHeadDim; d++) acc[d] = (acc[d] as number) + w * (values[vo + d] as number);
    }
    for (let d = 0; d < vHeadDim; d++) out[oo + d] = acc[d] as number;
  }
}

/** Reusable scratch so attention allocates nothing per token. */
export class AttentionScratch {
  private s = new Float64Array(256);
  private sl = new Int32Array(256);
  private a = new Float64Array(128);

  scores(n: number): Float64Array {
    if (this.s.length < n) this.s = new Float64Array(Math.max(n, this.s.length * 2));
    return this.s;
  }

  slots(n: number): Int32Array {
    if (this.sl.length < n) this.sl = new Int32Array(Math.max(n, this.sl.length * 2));
    return this.sl;
  }

  acc(n: number): Float64Array {
    if (this.a.length < n) this.a = new Float64Array(n);
    return this.a;
  }
}
