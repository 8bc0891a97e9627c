import type { PagedKv } from "../../cache/storage.js";
import { softmax } from "../softmax.js";

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
  /** A learned logit per head and relative-distance bucket added to each score, or undefined for none. */
  readonly relativeBias?: RelativeBias;
}

/**
 * T5-style relative position logits: head h's score for a key d positions back gets
 * logits[h * numBuckets + buckets[min(d, buckets.length - 1)]] added after the 1/sqrt scaling.
 * Only this scalar reference takes them (blocks/attention/relative-bias-attention.ts calls it); the
 * pool's fast kernels have no bias term.
 */
export interface RelativeBias {
  /** [numHeads, numBuckets], head-major. */
  readonly logits: Float32Array;
  readonly numBuckets: number;
  /** The bucket of each distance 0..buckets.length - 1, the last standing for every further one. */
  readonly buckets: Int32Array;
}

/**
 * The scalar reference for attention. The fast kernels (attention-kernel.ts, plain and tiled, and
 * attention.wat) must equal it bit for bit.
 * Grouped-query attention of one token over a paged cache: each group of numHeads/numKvHeads query
 * heads shares one key/value head. Scores are summed position by position in a fixed order, so the
 * result depends only on the sequence itself, not on what else is in the batch.
 */
export function pagedAttention(
  query: AttentionQuery,
  cache: PagedKv,
  params: AttentionParams,
  scratch: AttentionScratch,
): void {
  const { q, qOffset, blocks, pos, out, outOffset } = query;
  const { numHeads, scale, sinks, relativeBias } = params;
  const { headDim, vHeadDim, numKvHeads, keys, values, keyStride, valueStride } = cache;
  const { placement } = cache;
  const first = placement.firstVisible(pos);
  const n = pos - first + 1;
  const slots = scratch.slots(n);
  // Slots of consecutive positions are consecutive within a block: look the block up once per block.
  const bs = placement.blockSize;
  for (let i = 0; i < n; ) {
    const pos = first + i;
    const base = placement.slot(blocks, pos);
    const run = Math.min(n - i, bs - (pos % bs));
    for (let j = 0; j < run; j++) slots[i + j] = base + j;
    i += run;
  }
  const group = numHeads / numKvHeads;
  const scores = scratch.scores(n * group);
  const acc = scratch.acc(vHeadDim);
  const hd4 = headDim - (headDim % 4);
  for (let kvh = 0; kvh < numKvHeads; kvh++) {
    // Each key is read once for the `group` query heads that share it.
    for (let i = 0; i < n; i++) {
      const ko = (slots[i] as number) * keyStride + kvh * headDim;
      for (let g = 0; g < group; g++) {
        const qo = qOffset + (kvh * group + g) * headDim;
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
        scores[g * n + i] =
          relativeBias === undefined
            ? s * scale
            : s * scale + relativeLogit(relativeBias, kvh * group + g, n - 1 - i);
      }
    }
    for (let g = 0; g < group; g++) {
      const h = kvh * group + g;
      softmax(scores, g * n, n, sinks === undefined ? undefined : (sinks[h] as number));
      acc.fill(0, 0, vHeadDim);
      for (let i = 0; i < n; i++) {
        const w = scores[g * n + i] as number;
        const vo = (slots[i] as number) * valueStride + kvh * vHeadDim;
        for (let d = 0; d < vHeadDim; d++) acc[d] = (acc[d] as number) + w * (values[vo + d] as number);
      }
      const oo = outOffset + h * vHeadDim;
      for (let d = 0; d < vHeadDim; d++) out[oo + d] = acc[d] as number;
    }
  }
}

function relativeLogit(bias: RelativeBias, head: number, distance: number): number {
  const { buckets } = bias;
  const bucket = buckets[Math.min(distance, buckets.length - 1)] as number;
  return bias.logits[head * bias.numBuckets + bucket] as number;
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
