import { type KernelThread, sharedFloats, type ThreadKernel } from "../kernel-thread.js";
import { matmulRange } from "./matmul-kernel.js";
import { type RowUnits, unitStart } from "./row-units.js";

/** One registered weight's share of a matmul dispatch. */
export interface MatmulSegment {
  /** Its id among the registered weights. */
  readonly id: number;
  /** Output rows (the weight's rows). */
  readonly N: number;
  /** Where its rows start in the dispatch's run of rows; its [M, N] output starts at M * rowOffset. */
  readonly rowOffset: number;
  /**
   * Byte offset of its [M, N] output in the shared memory: in the staged output, or an array of the
   * caller's that lies there; -1 when the staged output lies elsewhere.
   */
  readonly outOffset: number;
}

/** Several matmuls over one input [M, K], their output rows taken as one run. */
export interface MatmulJob {
  readonly M: number;
  readonly K: number;
  /** Byte offset of the input in the shared memory: the staged input or the caller's (-1: elsewhere). */
  readonly xOffset: number;
  /** Byte offset of the staged input in pairs (MatmulRange.xPairs), or -1. */
  readonly xPairs: number;
  readonly totalRows: number;
  /** How the run of rows is cut into units. */
  readonly units: RowUnits;
  readonly segments: readonly MatmulSegment[];
  /** Byte offset of the input quantized for the integer MXFP4 path, or -1 (MatmulRange.quantized). */
  readonly quantized: number;
}

/** Rows [lo, hi) of one segment's weight (its own row numbers) over the dispatch's staged input. */
export function segmentRows(
  thread: KernelThread,
  job: MatmulJob,
  seg: MatmulSegment,
  lo: number,
  hi: number,
): void {
  matmulRange(
    {
      x: thread.x,
      xOffset: job.xOffset,
      xPairs: job.xPairs,
      M: job.M,
      K: job.K,
      weight: thread.weights.get(seg.id) as NonNullable<ReturnType<typeof thread.weights.get>>,
      out:
        (seg.outOffset >= 0 ? sharedFloats(thread, seg.outOffset, job.M * seg.N) : null) ??
        thread.out.subarray(job.M * seg.rowOffset),
      outOffset: seg.outOffset,
      N: seg.N,
      n0: lo,
      n1: hi,
      quantized: job.quantized,
    },
    thread,
  );
}

/** Unit d: its rows of the run (row-units.ts), in whichever weights they fall. */
export const matmulJob: ThreadKernel<MatmulJob> = {
  run(thread, job, unit) {
    const r0 = unitStart(job.units, unit);
    const r1 = Math.min(job.totalRows, unitStart(job.units, unit + 1));
    for (const seg of job.segments) {
      const lo = Math.max(r0, seg.rowOffset);
      const hi = Math.min(r1, seg.rowOffset + seg.N);
      if (lo < hi) segmentRows(thread, job, seg, lo - seg.rowOffset, hi - seg.rowOffset);
    }
  },
};
