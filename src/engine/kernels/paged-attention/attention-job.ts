import { type KernelThread, sharedFloats, type ThreadKernel } from "../kernel-thread.js";
import {
  type AttentionRows,
  type AttentionStep,
  attendTokens,
  attendTokensSimd,
} from "./attention-kernel.js";

/** One layer's attention over a step's tokens as the pool runs it. */
export interface AttentionParams extends AttentionStep {
  /** Whether the thread's SIMD loops run it (headDim % 4 == 0, vHeadDim % 8 == 0). */
  readonly simd: boolean;
}

/** Attention for tokens [t0, t1): the SIMD loops where asked and present, else the plain kernel. */
export function attendRange(
  thread: KernelThread,
  p: AttentionParams,
  rows: AttentionRows,
  t0: number,
  t1: number,
): void {
  if (p.simd && thread.attention !== null)
    attendTokensSimd(p, rows, t0, t1, thread.attentionScratch, thread.attention);
  else attendTokens(p, rows, t0, t1, thread.attentionScratch);
}

/** cost[t]: the positions tokens before t read (meta as AttentionStep's); cost[T], all of them. */
export function attentionCosts(meta: Int32Array): Float64Array {
  const T = meta.length / 3;
  const cost = new Float64Array(T + 1);
  for (let t = 0; t < T; t++)
    cost[t + 1] = (cost[t] as number) + ((meta[3 * t] as number) - (meta[3 * t + 1] as number) + 1);
  return cost;
}

/**
 * Units of about equal cost (positions read) for `parts` threads, claimed from the shared counter
 * like matmul rows: unit u covers tokens [bounds[u], bounds[u + 1]). A prefill keeps units of at
 * least a tile so its keys are still read once per tile.
 */
export function attentionBounds(cost: Float64Array, parts: number, tile: number): number[] {
  const T = cost.length - 1;
  const total = cost[T] as number;
  const U = T >= parts * tile ? Math.min(4 * parts, Math.floor(T / tile)) : Math.min(T, 4 * parts);
  const bounds = [0];
  for (let u = 1; u < U; u++) {
    let t = bounds[bounds.length - 1] as number;
    while (t < T && (cost[t] as number) < (total * u) / U) t++;
    if (t > (bounds[bounds.length - 1] as number) && t < T) bounds.push(t);
  }
  bounds.push(T);
  return bounds;
}

/** A dispatch: its queries and outputs, a registered KV cache, and units of tokens. */
export interface AttentionDispatch extends AttentionParams {
  readonly kvId: number;
  /**
   * Byte offsets in the shared memory of the caller's queries [T, numHeads * headDim] and outputs
   * [T, numHeads * vHeadDim] where they lie there (a replayed step's), or -1: the staged input
   * and output hold them.
   */
  readonly qOffset: number;
  readonly outOffset: number;
  /** Unit u covers tokens [bounds[u], bounds[u + 1]), of about equal cost. */
  readonly bounds: readonly number[];
}

export const attentionJob: ThreadKernel<AttentionDispatch> = {
  run(thread, job, unit) {
    const kv = thread.kvs.get(job.kvId) as { keys: Float32Array; values: Float32Array };
    const T = job.meta.length / 3;
    const inPlace = (offset: number, width: number) =>
      offset >= 0 ? sharedFloats(thread, offset, T * job.numHeads * width) : null;
    const rows = {
      q: inPlace(job.qOffset, job.headDim) ?? thread.x,
      out: inPlace(job.outOffset, job.vHeadDim) ?? thread.out,
      keys: kv.keys,
      values: kv.values,
    };
    attendRange(thread, job, rows, job.bounds[unit] as number, job.bounds[unit + 1] as number);
  },
};
