import type { KernelThread, ThreadKernel } from "../kernel-thread.js";
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
  const call = { ...p, ...rows, t0, t1 };
  if (p.simd && thread.attention !== null) attendTokensSimd(call, thread.attentionScratch, thread.attention);
  else attendTokens(call, thread.attentionScratch);
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
