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

/**
 * Rows [lo, hi) of one segment's weight (its own row numbers) over the dispatch's staged input;
 * `ahead` is the byte offset of the weights the thread reads next (weightsAt), or -1.
 */
export function segmentRows(
  thread: KernelThread,
  job: MatmulJob,
  seg: MatmulSegment,
  lo: number,
  hi: number,
  ahead: number,
): void {
  matmulRange(
    {
      ahead,
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

/**
 * Byte offset in the shared memory of row `row` (the segment's own numbering) of a segment's f32
 * weight where it lies there, which a matmul reading ahead may read; -1 for any other weight.
 */
export function weightsAt(thread: KernelThread, job: MatmulJob, seg: MatmulSegment, row: number): number {
  const parts = thread.weights.get(seg.id);
  return parts === undefined || parts.dtype !== 0 || parts.offset < 0 ? -1 : parts.offset + row * job.K * 4;
}

/** weightsAt for row `row` of the dispatch's run of rows, in whichever weight it falls. */
function runWeightsAt(thread: KernelThread, job: MatmulJob, row: number): number {
  const seg = job.segments.find((s) => row >= s.rowOffset && row < s.rowOffset + s.N);
  return seg === undefined ? -1 : weightsAt(thread, job, seg, row - seg.rowOffset);
}

/**
 * Unit d: its rows of the run (row-units.ts), in whichever weights they fall; each weight's rows
 * read ahead the next's, the last the next unit's this thread claimed (claimsAhead).
 */
export const matmulJob: ThreadKernel<MatmulJob> = {
  claimsAhead: true,
  run(thread, job, unit, next) {
    const r0 = unitStart(job.units, unit);
    const r1 = Math.min(job.totalRows, unitStart(job.units, unit + 1));
    for (const seg of job.segments) {
      const lo = Math.max(r0, seg.rowOffset);
      const hi = Math.min(r1, seg.rowOffset + seg.N);
      if (lo >= hi) continue;
      const after = hi < r1 ? hi : next >= 0 ? unitStart(job.units, next) : -1;
      const ahead = after < 0 ? -1 : runWeightsAt(thread, job, after);
      segmentRows(thread, job, seg, lo - seg.rowOffset, hi - seg.rowOffset, ahead);
    }
  },
};
