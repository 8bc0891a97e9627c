import type { KernelThread, ThreadKernel } from "../kernel-thread.js";
import { matmulRange } from "./matmul-kernel.js";

/** One registered weight's share of a matmul dispatch. */
export interface MatmulSegment {
  /** Its id among the registered weights. */
  readonly id: number;
  /** Output rows (the weight's rows). */
  readonly N: number;
  /** Where its rows start in the dispatch's run of rows; its [M, N] output starts at M * rowOffset. */
  readonly rowOffset: number;
  /** Byte offset of that output in the shared memory, or -1 when the staged output lies elsewhere. */
  readonly outOffset: number;
}

/** Several matmuls over the staged input [M, K], their output rows taken as one run. */
export interface MatmulJob {
  readonly M: number;
  readonly K: number;
  /** Byte offset of the staged input in the shared memory (-1: elsewhere). */
  readonly xOffset: number;
  /** Byte offset of the staged input in pairs (MatmulRange.xPairs), or -1. */
  readonly xPairs: number;
  readonly totalRows: number;
  /** Rows a unit covers before `tailFrom` (whole groups of four, the SIMD tile's). */
  readonly rowChunk: number;
  /** The row from which units cover a quarter of rowChunk (see rowUnits). */
  readonly tailFrom: number;
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
      out: thread.out.subarray(job.M * seg.rowOffset),
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
 * How `rows` output rows of a dispatch over M input rows are cut into the units `threads` threads
 * claim: units of rowChunk rows, then over the last threads · rowChunk rows or so, units a quarter
 * that size, so that when the big units run out the threads share the rest in small pieces and
 * none waits long on another's last big unit (each output is computed alike whoever takes it, so
 * the cut changes no bits). At one input row all units are big: there a unit is short, and more
 * of them would cost more than the wait.
 */
export function rowUnits(
  rows: number,
  rowChunk: number,
  threads: number,
  M: number,
): { tailFrom: number; units: number } {
  const big = M > 1 ? Math.max(0, Math.floor(rows / rowChunk) - threads) : Math.ceil(rows / rowChunk);
  const tailFrom = Math.min(rows, big * rowChunk);
  return { tailFrom, units: big + Math.ceil((rows - tailFrom) / (rowChunk >> 2)) };
}

/** The rows [r0, r1) unit `unit` covers of a run of `rows` cut as rowUnits cuts it. */
export function unitRows(
  job: Pick<MatmulJob, "rowChunk" | "tailFrom">,
  rows: number,
  unit: number,
): [number, number] {
  const big = job.tailFrom / job.rowChunk;
  const small = job.rowChunk >> 2;
  const r0 = unit < big ? unit * job.rowChunk : job.tailFrom + (unit - big) * small;
  return [r0, Math.min(rows, r0 + (unit < big ? job.rowChunk : small))];
}

/** Unit d: rows unitRows(job, totalRows, d) of the run, in whichever weights they fall. */
export const matmulJob: ThreadKernel<MatmulJob> = {
  run(thread, job, unit) {
    const [r0, r1] = unitRows(job, job.totalRows, unit);
    for (const seg of job.segments) {
      const lo = Math.max(r0, seg.rowOffset);
      const hi = Math.min(r1, seg.rowOffset + seg.N);
      if (lo < hi) segmentRows(thread, job, seg, lo - seg.rowOffset, hi - seg.rowOffset);
    }
  },
};

/** The first outs.length outputs of a dispatch from the staged output `stagedOut` into `outs`. */
export function copyOuts(job: MatmulJob, stagedOut: Float32Array, outs: readonly Float32Array[]): void {
  outs.forEach((out, i) => {
    const { rowOffset, N } = job.segments[i] as MatmulSegment;
    out.set(stagedOut.subarray(job.M * rowOffset, job.M * (rowOffset + N)));
  });
}

/**
 * The segments of a dispatch over M input rows of the weights `parts` (their ids and rows): their
 * outputs one after another in the staged output at byte offset `outOffset` (-1: not in the shared
 * memory), output i at M · the rows before it.
 */
export function matmulSegments(
  parts: readonly { id: number; N: number }[],
  M: number,
  outOffset: number,
): MatmulSegment[] {
  let rowOffset = 0;
  return parts.map(({ id, N }) => {
    const segment = { id, N, rowOffset, outOffset: outOffset < 0 ? -1 : outOffset + M * rowOffset * 4 };
    rowOffset += N;
    return segment;
  });
}
