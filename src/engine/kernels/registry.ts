import { indexerScoresJob } from "./indexer-scores/indexer-job.js";
import type { ThreadKernel } from "./kernel-thread.js";
import { matmulJob } from "./matmul/matmul-job.js";
import { matmulSwigluJob } from "./matmul/matmul-swiglu-job.js";
import { attentionJob } from "./paged-attention/attention-job.js";
import { swigluJob } from "./swiglu/swiglu-job.js";

/**
 * Every kernel the pool's threads run, by name. Adding one: its file (a ThreadKernel over a typed
 * parameter object) and its line here; MatmulPool.run then dispatches it.
 */
export const KERNELS = {
  matmul: matmulJob,
  matmulSwiglu: matmulSwigluJob,
  attention: attentionJob,
  swiglu: swigluJob,
  indexer: indexerScoresJob,
} as const;

export type KernelName = keyof typeof KERNELS;

/** The parameter object of kernel `N`. */
export type KernelParams<N extends KernelName> =
  (typeof KERNELS)[N] extends ThreadKernel<infer P> ? P : never;

/** A dispatch as the workers receive it: which kernel, its parameters, and its share of the counter. */
export type JobMessage = {
  [N in KernelName]: {
    readonly type: "job";
    readonly kernel: N;
    readonly params: KernelParams<N>;
    /** Where the shared NEXT counter started for this dispatch. */
    readonly base: number;
    readonly units: number;
    /** The shared memory's byte length when the job was sent: every offset in it lies below. */
    readonly memoryBytes: number;
    /**
     * Whether the caller posted the job before writing all of its inputs (a matmul's input pairs,
     * so the helpers' wake-up overlaps that work) and opens it through CONTROL.READY (awaitInputs).
     */
    readonly gated: boolean;
  };
}[KernelName];

/** Runs unit `unit` of a dispatch on `thread`, `next` the one it runs after (ThreadKernel.run). */
export function runUnit(
  thread: Parameters<ThreadKernel<unknown>["run"]>[0],
  job: JobMessage,
  unit: number,
  next: number,
): void {
  (KERNELS[job.kernel] as ThreadKernel<typeof job.params>).run(thread, job.params, unit, next);
}

/** Whether the threads claim a dispatch's units one ahead (ThreadKernel.claimsAhead). */
export function claimsAhead(job: JobMessage): boolean {
  return (KERNELS[job.kernel] as ThreadKernel<typeof job.params>).claimsAhead === true;
}
