import { attendTokens, attendTokensSimd, SIMD_POSITION_BLOCK } from "../attention/attention-kernel.js";
import type { KernelThread, ThreadKernel } from "./kernel-thread.js";

/** One layer's attention over a step's tokens (see attendTokens), apart from its arrays of rows. */
export interface AttentionParams {
  /** Per token: position, first visible position, offset of its block table in `tables`. */
  readonly meta: Int32Array;
  readonly tables: Int32Array;
  readonly blockSize: number;
  readonly ringBlocks: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly vHeadDim: number;
  readonly scale: number;
  readonly sinks: Float32Array | null;
  /** Whether the thread's SIMD loops run it (headDim % 4 == 0, vHeadDim % 8 == 0). */
  readonly simd: boolean;
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

/** Attention for tokens [t0, t1): the SIMD loops where asked and present, else the plain kernel. */
export function attendRange(
  thread: KernelThread,
  p: AttentionParams,
  rows: AttentionRows,
  t0: number,
  t1: number,
): void {
  const args = [
    t0,
    t1,
    p.meta,
    p.tables,
    p.blockSize,
    p.ringBlocks,
    rows.q,
    rows.out,
    rows.keys,
    rows.values,
    p.numHeads,
    p.numKvHeads,
    p.headDim,
    p.vHeadDim,
    p.scale,
    p.sinks,
    thread.attentionScratch,
  ] as const;
  if (p.simd && thread.attention !== null)
    attendTokensSimd(...args, thread.attention, attendTokens, p.tile, SIMD_POSITION_BLOCK);
  else attendTokens(...args, p.tile);
}

/** A dispatch: the staged queries and outputs, a registered KV cache, and units of tokens. */
export interface AttentionDispatch extends AttentionParams {
  readonly kvId: number;
  /** Unit u covers tokens [bounds[u], bounds[u + 1]), of about equal cost. */
  readonly bounds: readonly number[];
}

export const attentionJob: ThreadKernel<AttentionDispatch> = {
  run(thread, job, unit) {
    const kv = thread.kvs.get(job.kvId) as { keys: Float32Array; values: Float32Array };
    const rows = { q: thread.x, out: thread.out, keys: kv.keys, values: kv.values };
    attendRange(thread, job, rows, job.bounds[unit] as number, job.bounds[unit + 1] as number);
  },
};
