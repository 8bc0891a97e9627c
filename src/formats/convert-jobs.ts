import { BringupError } from "../common/errors.js";
import { float32ToBf16 } from "./bf16.js";
import type { Checkpoint } from "./checkpoint.js";
import { e8m0Table } from "./e8m0.js";
import { floatToFp8Tile128 } from "./fp8-blockwise.js";
import { type LogicalTensor, logicalRows, readLogicalRows } from "./logical.js";
import { checkMxfp4Scales, encodeMxfp4, MXFP4_BLOCK, MXFP4_BLOCK_BYTES } from "./mxfp4.js";
import { SimdArena } from "./mxfp4-fp8-simd.js";
import { mxfp4ToFp8Block32, mxfp4ToFp8Tile128, nibbleCodes, TILE, type TileReport } from "./mxfp4-to-fp8.js";

/**
 * One unit of conversion work: rows [start, end) of one logical tensor. Jobs are plain data so they
 * cross to worker threads; each returns the bytes of each output part for those rows, in order.
 */
export type JobOp =
  | { op: "copy"; stored: string; rowBytes: number }
  | { op: "to-bf16" }
  | { op: "mxfp4-to-fp8"; block: "tile128" | "block32"; allowInexact: boolean }
  | { op: "float-to-fp8" }
  | { op: "float-to-mxfp4" };

export type Job = JobOp & { tensor: LogicalTensor; start: number; end: number };

export interface JobResult {
  parts: Uint8Array[];
  /** For MXFP4 to FP8 tiles: what could not be exact. */
  report?: TileReport;
}

const bytesOf = (a: Float32Array | Uint16Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/**
 * The memory one runner (a worker, or the calling thread) converts in. With WebAssembly SIMD it is
 * a shared arena: reads land in it, the kernel works in place, and outputs leave as views of it
 * (posting a view of shared memory copies nothing); the writer gives each region back once its
 * bytes are on disk. Without it, plain arrays.
 */
export class Scratch {
  readonly arena = SimdArena.create(nibbleCodes);

  /** An output buffer of `bytes`, until given back. Its old contents are undefined. */
  take(bytes: number): Uint8Array {
    return this.arena?.alloc(bytes) ?? new Uint8Array(bytes);
  }

  /** Gives back an output buffer from `take`, by the view or its offset in the arena. */
  give(region: Uint8Array | number): void {
    if (typeof region === "number" || this.arena?.owns(region)) this.arena?.release(region);
  }
}

/** A job whose source bytes are read; `run` converts them (and gives its read buffers back). */
export interface LoadedJob {
  run(): Promise<JobResult>;
}

/**
 * Reads one job's source bytes, so a runner can read the next job while it converts this one;
 * `run` then does the work. Same code in workers and inline. The parts a job returns never alias
 * its read buffers; once written, the caller gives each part back to `scratch`.
 */
export async function loadJob(ck: Checkpoint, job: Job, scratch: Scratch): Promise<LoadedJob> {
  if (job.op !== "mxfp4-to-fp8") return { run: () => runWhole(ck, job, scratch) };
  const { tensor, start, end } = job;
  const subject = `${ck.tensor(tensor.parts[0]).file}#${tensor.name}`;
  const groups = logicalRows(tensor).cols / MXFP4_BLOCK;
  const [blocksName, scalesName] = tensor.parts as [string, string];
  const [g0, g1] = [start * groups, end * groups];
  const scales = await ck.readTensorRange(scalesName, g0, g1, scratch.take(g1 - g0));
  try {
    checkMxfp4Scales(scales, subject, g0); // here, so the block named is the tensor's own
    const [b0, b1] = [g0 * MXFP4_BLOCK_BYTES, g1 * MXFP4_BLOCK_BYTES];
    const blocks = await ck.readTensorRange(blocksName, b0, b1, scratch.take(b1 - b0));
    return {
      run: async () => {
        try {
          return mxfp4ToFp8Job(job, subject, blocks, scales, scratch);
        } finally {
          scratch.give(blocks);
          scratch.give(scales);
        }
      },
    };
  } catch (error) {
    scratch.give(scales);
    throw error;
  }
}

function mxfp4ToFp8Job(
  job: Job & { op: "mxfp4-to-fp8" },
  subject: string,
  blocks: Uint8Array,
  scales: Uint8Array,
  scratch: Scratch,
): JobResult {
  const { tensor, start, end } = job;
  const { cols } = logicalRows(tensor);
  const groups = cols / MXFP4_BLOCK;
  if (job.block === "block32") {
    const elements = mxfp4ToFp8Block32(
      blocks,
      scales,
      subject,
      scratch.take(blocks.length * 2),
      scratch.arena,
    );
    const table = e8m0Table();
    const scaleBytes = scratch.take(scales.length * 4);
    const scaleInv = new Float32Array(scaleBytes.buffer, scaleBytes.byteOffset, scales.length);
    for (let i = 0; i < scales.length; i += 1) scaleInv[i] = table[scales[i] as number] as number;
    return { parts: [elements, scaleBytes] };
  }
  const matrixRows = tensor.shape.at(-2) as number;
  const out = tileOutputs(tensor, start, end, scratch);
  const reports: TileReport[] = [];
  for (const band of bands(tensor, start, end)) {
    const [g0, g1] = [band.from * groups, band.to * groups];
    reports.push(
      mxfp4ToFp8Tile128(
        blocks.subarray(g0 * MXFP4_BLOCK_BYTES, g1 * MXFP4_BLOCK_BYTES),
        scales.subarray(g0, g1),
        band.rows,
        cols,
        job.allowInexact,
        subject,
        (start + band.from) % matrixRows,
        band.view(out),
        scratch.arena,
      ),
    );
  }
  return {
    parts: [out.elements, bytesOf(out.scaleInv)],
    report: {
      inexactTiles: reports.flatMap((r) => r.inexactTiles),
      maxAbsError: Math.max(0, ...reports.map((r) => r.maxAbsError)),
      maxRelError: Math.max(0, ...reports.map((r) => r.maxRelError)),
    },
  };
}

/** The other jobs, read and converted in one go. */
async function runWhole(
  ck: Checkpoint,
  job: Exclude<Job, { op: "mxfp4-to-fp8" }>,
  scratch: Scratch,
): Promise<JobResult> {
  const { tensor, start, end } = job;
  const { cols } = logicalRows(tensor);
  const subject = `${ck.tensor(tensor.parts[0]).file}#${tensor.name}`;
  switch (job.op) {
    case "copy":
      return {
        parts: [
          await ck.readTensorRange(
            job.stored,
            start * job.rowBytes,
            end * job.rowBytes,
            scratch.take((end - start) * job.rowBytes),
          ),
        ],
      };
    case "to-bf16": {
      const values = await readLogicalRows(ck, tensor, start, end);
      for (let i = 0; i < values.length; i += 1) {
        if (!Number.isFinite(values[i] as number)) {
          throw new BringupError(
            "NOT_REPRESENTABLE",
            `${subject}: element ${start * cols + i} decodes to ${values[i]}, which bf16 cannot carry faithfully; keep this tensor in its source format.`,
            { subject },
          );
        }
      }
      return { parts: [bytesOf(float32ToBf16(values))] };
    }
    case "float-to-fp8": {
      const values = await readLogicalRows(ck, tensor, start, end);
      const out = tileOutputs(tensor, start, end, scratch);
      for (const band of bands(tensor, start, end)) {
        floatToFp8Tile128(values.subarray(band.from * cols, band.to * cols), band.rows, cols, band.view(out));
      }
      return { parts: [out.elements, bytesOf(out.scaleInv)] };
    }
    case "float-to-mxfp4": {
      const { blocks, scales } = encodeMxfp4(await readLogicalRows(ck, tensor, start, end), subject);
      return { parts: [blocks, scales] };
    }
  }
}

interface TileOutputs {
  elements: Uint8Array;
  scaleInv: Float32Array;
}

/** Output arrays for rows [start, end) of a 128x128-tiled FP8 tensor. */
function tileOutputs(tensor: LogicalTensor, start: number, end: number, scratch: Scratch): TileOutputs {
  const { cols } = logicalRows(tensor);
  const gridRows = bands(tensor, start, end).reduce((n, b) => n + Math.ceil(b.rows / TILE), 0);
  const [elementBytes, scaleCount] = [(end - start) * cols, gridRows * Math.ceil(cols / TILE)];
  // Recycled buffers hold old bytes; the tile kernels write every element and scale.
  const scales = scratch.take(scaleCount * 4);
  return {
    elements: scratch.take(elementBytes),
    scaleInv: new Float32Array(scales.buffer, scales.byteOffset, scaleCount),
  };
}

/**
 * Splits rows [start, end) at matrix boundaries (a matrix is the last two dimensions), so a tile
 * kernel sees one band of one matrix at a time; each band writes into its slice of the outputs.
 * Rows are relative to `start`.
 */
function bands(tensor: LogicalTensor, start: number, end: number) {
  const { cols } = logicalRows(tensor);
  const gridCols = Math.ceil(cols / TILE);
  const matrixRows = tensor.shape.length >= 2 ? (tensor.shape.at(-2) as number) : 1;
  const out: { from: number; to: number; rows: number; view: (o: TileOutputs) => TileOutputs }[] = [];
  let grid = 0;
  for (let s = start; s < end; ) {
    const e = Math.min(end, (Math.floor(s / matrixRows) + 1) * matrixRows);
    const [from, to, g0] = [s - start, e - start, grid];
    const g1 = g0 + Math.ceil((e - s) / TILE) * gridCols;
    out.push({
      from,
      to,
      rows: e - s,
      view: (o) => ({
        elements: o.elements.subarray(from * cols, to * cols),
        scaleInv: o.scaleInv.subarray(g0, g1),
      }),
    });
    grid = g1;
    s = e;
  }
  return out;
}

/** Bytes of source data one row of the job reads, for chunking and progress. */
export function sourceRowBytes(ck: Checkpoint, tensor: LogicalTensor): number {
  const { rows } = logicalRows(tensor);
  if (rows === 0) return 0;
  return tensor.parts.reduce((n, part) => n + ck.tensor(part).byteLength, 0) / rows;
}
