import { closeSync, openSync } from "node:fs";
import { BringupError } from "../common/errors.js";
import { bf16ToFloat32, float32ToBf16 } from "./bf16.js";
import type { Checkpoint } from "./checkpoint.js";
import { decodeToFloat32 } from "./decode.js";
import { e8m0Table } from "./e8m0.js";
import { floatToFp8Tile128 } from "./fp8-blockwise.js";
import { fp8ValuesToMxfp4 } from "./fp8-to-mxfp4.js";
import {
  type LogicalTensor,
  logicalRows,
  readLogicalRows,
  readLogicalRowsWide,
  readMxfp4Codes,
} from "./logical.js";
import { checkMxfp4Scales, encodeMxfp4, MXFP4_BLOCK, MXFP4_BLOCK_BYTES } from "./mxfp4.js";
import { SimdArena } from "./mxfp4-fp8-simd.js";
import { mxfp4ToFp8Block32, mxfp4ToFp8Tile128, nibbleCodes, TILE, type TileReport } from "./mxfp4-to-fp8.js";
import { outputError } from "./output-errors.js";
import { writeAtSync } from "./safetensors-writer.js";

/**
 * One unit of conversion work: rows [start, end) of one logical tensor. Jobs are plain data so they
 * cross to worker threads; each makes the bytes of its output parts (see partBytes) for those rows.
 */
export type JobOp =
  | { op: "copy"; stored: string; rowBytes: number }
  | { op: "to-bf16"; allowInexact: boolean }
  | { op: "fp8-to-mxfp4" }
  | { op: "mxfp4-to-fp8"; block: "tile128" | "block32"; allowInexact: boolean }
  | { op: "float-to-fp8"; allowNonFinite: boolean }
  | { op: "float-to-mxfp4" };

export type Job = JobOp & { tensor: LogicalTensor; start: number; end: number };

/** Values rounded where a conversion allowed to be inexact could not carry them. */
export interface Rounding {
  readonly values: number;
  readonly maxAbsError: number;
  readonly maxRelError: number;
}

export interface JobResult {
  parts: Uint8Array[];
  /** For MXFP4 to FP8 tiles: what could not be exact. */
  report?: TileReport;
  rounded?: Rounding;
}

/** Where a job's parts go: the file written in place, and where each part's first byte goes in it. */
export interface JobTarget {
  readonly path: string;
  readonly positions: readonly number[];
}

/** A job and where it writes: what a worker is sent. */
export interface ConvertTask {
  readonly job: Job;
  readonly target: JobTarget;
}

/** What a job that wrote its parts reports. */
export interface JobOutcome {
  readonly report?: TileReport;
  readonly rounded?: Rounding;
}

/**
 * Source bytes a runner reads, converts and writes at a time: small enough that the source, the
 * result and the write's copy of it stay in the core's cache. On one core, 1 GiB of MXFP4 to FP8 took
 * 1.7-2.3 s in pieces of 128 KiB to 1 MiB (alike within this host's noise), and 2.4-3.2 s when each
 * 16 MiB job was converted whole and written from memory.
 */
export const PIECE_BYTES = 256 * 1024;

/** Whether an op's rows come in whole 128-row bands or whole matrices: its scales cover 128x128 tiles. */
export function isTiled(op: JobOp): boolean {
  return op.op === "float-to-fp8" || (op.op === "mxfp4-to-fp8" && op.block === "tile128");
}

/**
 * Rows [start, end) of `tensor` cut into ranges of at most about `bytes` of source (one row at
 * least); tiled ranges are whole 128-row bands of one matrix, or whole matrices. `start` must be
 * where a range of the same kind could start.
 */
export function rowRanges(
  tensor: LogicalTensor,
  tiled: boolean,
  rowBytes: number,
  bytes: number,
  start: number,
  end: number,
): [number, number][] {
  const ranges: [number, number][] = [];
  const matrixRows = tiled ? (tensor.shape.at(-2) as number) : 1;
  let step = Math.max(1, Math.floor(bytes / Math.max(1, rowBytes)));
  let cut = Number.POSITIVE_INFINITY; // ranges end at multiples of this too
  if (tiled && matrixRows * rowBytes <= bytes) {
    step = Math.floor(bytes / (matrixRows * rowBytes)) * matrixRows;
  } else if (tiled) {
    step = Math.max(1, Math.floor(bytes / (TILE * rowBytes))) * TILE;
    cut = matrixRows;
  }
  for (let s = start; s < end; ) {
    const e = Math.min(end, s + step, (Math.floor(s / cut) + 1) * cut);
    ranges.push([s, e]);
    s = e;
  }
  return ranges;
}

/** Bytes of each output part of a job (for its rows only), in part order. */
export function partBytes(job: Job): number[] {
  const { tensor, start, end } = job;
  const rows = end - start;
  const { cols } = logicalRows(tensor);
  switch (job.op) {
    case "copy":
      return [rows * job.rowBytes];
    case "to-bf16":
      return [rows * cols * 2];
    case "float-to-mxfp4":
    case "fp8-to-mxfp4":
      return [(rows * cols * MXFP4_BLOCK_BYTES) / MXFP4_BLOCK, (rows * cols) / MXFP4_BLOCK];
    case "mxfp4-to-fp8":
    case "float-to-fp8":
      if (!isTiled(job)) return [rows * cols, (rows * cols * 4) / MXFP4_BLOCK];
      return [rows * cols, tileGridRows(tensor, start, end) * Math.ceil(cols / TILE) * 4];
  }
}

/**
 * Runs a job piece by piece (see PIECE_BYTES) and writes each piece's parts in place in the target
 * file, on the calling thread. Same code in workers and inline.
 */
export async function runJob(
  ck: Checkpoint,
  job: Job,
  target: JobTarget,
  scratch: Scratch,
): Promise<JobOutcome> {
  const expected = partBytes(job);
  const positions = [...target.positions];
  const reports: TileReport[] = [];
  const roundings: Rounding[] = [];
  let fd: number;
  try {
    fd = openSync(target.path, "r+");
  } catch (error) {
    throw outputError(error, target.path);
  }
  try {
    const rowBytes = sourceRowBytes(ck, job.tensor);
    for (const [start, end] of rowRanges(
      job.tensor,
      isTiled(job),
      rowBytes,
      PIECE_BYTES,
      job.start,
      job.end,
    )) {
      const result = await convertRows(ck, { ...job, start, end }, scratch);
      try {
        for (const [k, part] of result.parts.entries()) {
          writeAtSync(fd, part, positions[k] as number, target.path);
          positions[k] = (positions[k] as number) + part.byteLength;
        }
      } finally {
        for (const part of result.parts) scratch.give(part);
      }
      if (result.report) reports.push(result.report);
      if (result.rounded) roundings.push(result.rounded);
    }
  } finally {
    closeSync(fd);
  }
  const written = positions.map((p, k) => p - (target.positions[k] as number));
  if (written.join() !== expected.join()) {
    throw new BringupError(
      "CONVERT_INTERNAL",
      `${target.path}#${job.tensor.name}: rows ${job.start}-${job.end} wrote ${written.join("+")} bytes where ${expected.join("+")} were reserved; this is a bug, please report it.`,
      { subject: `${target.path}#${job.tensor.name}` },
    );
  }
  return {
    ...(reports.length > 0 ? { report: mergeReports(reports) } : {}),
    ...(roundings.length > 0 ? { rounded: mergeRoundings(roundings) } : {}),
  };
}

export function mergeRoundings(roundings: readonly Rounding[]): Rounding {
  return {
    values: roundings.reduce((n, r) => n + r.values, 0),
    maxAbsError: Math.max(0, ...roundings.map((r) => r.maxAbsError)),
    maxRelError: Math.max(0, ...roundings.map((r) => r.maxRelError)),
  };
}

/** One report for several pieces: every inexact tile, and the largest errors. */
export function mergeReports(reports: readonly TileReport[]): TileReport {
  return {
    inexactTiles: reports.flatMap((r) => r.inexactTiles),
    maxAbsError: Math.max(0, ...reports.map((r) => r.maxAbsError)),
    maxRelError: Math.max(0, ...reports.map((r) => r.maxRelError)),
  };
}

const bytesOf = (a: Float32Array | Uint16Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/**
 * The memory one runner (a worker, or the calling thread) converts in. With WebAssembly SIMD it is
 * the kernel's arena: reads land in it, the kernel works in place, and outputs are written from it;
 * each piece gives its regions back, so the next piece reuses the same, still cached, bytes.
 * Without SIMD, plain arrays.
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

/**
 * Reads rows [start, end) of a job's tensor and converts them. Same code in workers and inline. The
 * parts never alias the read buffers, which are given back; once written, the caller gives each
 * part back to `scratch`.
 */
async function convertRows(ck: Checkpoint, job: Job, scratch: Scratch): Promise<JobResult> {
  if (job.op !== "mxfp4-to-fp8") return convertOther(ck, job, scratch);
  const { tensor, start, end } = job;
  const subject = `${ck.tensor(tensor.parts[0]).file}#${tensor.name}`;
  const groups = logicalRows(tensor).cols / MXFP4_BLOCK;
  const scalesName = tensor.parts[1] as string;
  const [g0, g1] = [start * groups, end * groups];
  const scales = await ck.readTensorRange(scalesName, g0, g1, scratch.take(g1 - g0));
  let blocks: Uint8Array | undefined;
  try {
    checkMxfp4Scales(scales, subject, g0); // here, so the block named is the tensor's own
    const [b0, b1] = [g0 * MXFP4_BLOCK_BYTES, g1 * MXFP4_BLOCK_BYTES];
    blocks = await readMxfp4Codes(
      ck,
      tensor as LogicalTensor & { kind: "mxfp4" },
      g0,
      g1,
      scratch.take(b1 - b0),
    );
    return mxfp4ToFp8Job(job, subject, blocks, scales, scratch);
  } finally {
    if (blocks) scratch.give(blocks);
    scratch.give(scales);
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
  return { parts: [out.elements, bytesOf(out.scaleInv)], report: mergeReports(reports) };
}

/** The other ops. */
async function convertOther(
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
      if (tensor.kind === "fp8")
        return fp8ToBf16(
          await readLogicalRowsWide(ck, tensor, start, end),
          subject,
          start * cols,
          job.allowInexact,
        );
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
      if (!job.allowNonFinite) refuseNonFinite(values, subject, start * cols);
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
    case "fp8-to-mxfp4": {
      if (tensor.kind !== "fp8") {
        throw new BringupError("CONVERT_INTERNAL", `${subject}: not FP8; this is a bug, please report it.`, {
          subject,
        });
      }
      const values = await readLogicalRowsWide(ck, tensor, start, end);
      // With per-32 scales, each block's own scale is the first one tried.
      const groups = cols / MXFP4_BLOCK;
      const own =
        tensor.block[0] === 1 && tensor.block[1] === MXFP4_BLOCK
          ? decodeToFloat32(
              "F32",
              await ck.readTensorRange(tensor.parts[1], start * groups * 4, end * groups * 4),
              tensor.parts[1],
            )
          : undefined;
      const { blocks, scales } = fp8ValuesToMxfp4(values, subject, start * cols, own);
      return { parts: [blocks, scales] };
    }
  }
}

/**
 * FP8 values (exact, in float64) as bf16: exact where bf16 holds them (NaN stays NaN). Any other
 * value is refused, naming its element, or with `allowInexact` rounded (through float32) and counted.
 */
function fp8ToBf16(values: Float64Array, subject: string, first: number, allowInexact: boolean): JobResult {
  const out = float32ToBf16(Float32Array.from(values));
  const back = bf16ToFloat32(out);
  let rounded = 0;
  let maxAbsError = 0;
  let maxRelError = 0;
  for (let i = 0; i < values.length; i += 1) {
    const [want, got] = [values[i] as number, back[i] as number];
    if (want === got || Number.isNaN(want)) continue;
    if (!allowInexact) {
      throw new BringupError(
        "NOT_REPRESENTABLE",
        `${subject}: element ${first + i} is ${want}, which bf16 cannot hold exactly (nearest ${got}); keep the weight FP8, or pass --allow-inexact to round such values and report the error.`,
        { subject },
      );
    }
    rounded += 1;
    maxAbsError = Math.max(maxAbsError, Math.abs(got - want));
    maxRelError = Math.max(maxRelError, Math.abs(got - want) / Math.abs(want));
  }
  return {
    parts: [bytesOf(out)],
    ...(rounded > 0 ? { rounded: { values: rounded, maxAbsError, maxRelError } } : {}),
  };
}

/** Throws naming the first NaN or infinity, counted from element `first` of the tensor. */
function refuseNonFinite(values: Float32Array, subject: string, first: number): void {
  for (let i = 0; i < values.length; i += 1) {
    if (Number.isFinite(values[i] as number)) continue;
    throw new BringupError(
      "NOT_FINITE",
      `${subject}: element ${first + i} is ${values[i]}; quantizing it would spoil its whole 128x128 tile. Fix the source weight, or pass --allow-non-finite to quantize NaN as NaN and infinities as the largest finite value.`,
      { subject },
    );
  }
}

interface TileOutputs {
  elements: Uint8Array;
  scaleInv: Float32Array;
}

/** Output arrays for rows [start, end) of a 128x128-tiled FP8 tensor. */
function tileOutputs(tensor: LogicalTensor, start: number, end: number, scratch: Scratch): TileOutputs {
  const { cols } = logicalRows(tensor);
  const [elementBytes, scaleCount] = [
    (end - start) * cols,
    tileGridRows(tensor, start, end) * Math.ceil(cols / TILE),
  ];
  // Recycled buffers hold old bytes; the tile kernels write every element and scale.
  const scales = scratch.take(scaleCount * 4);
  return {
    elements: scratch.take(elementBytes),
    scaleInv: new Float32Array(scales.buffer, scales.byteOffset, scaleCount),
  };
}

/** Rows of 128x128 tiles that rows [start, end) of a tiled tensor cover (a partial band counts whole). */
function tileGridRows(tensor: LogicalTensor, start: number, end: number): number {
  return bands(tensor, start, end).reduce((n, b) => n + Math.ceil(b.rows / TILE), 0);
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
