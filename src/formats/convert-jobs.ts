import { BringupError } from "../common/errors.js";
import { float32ToBf16 } from "./bf16.js";
import type { Checkpoint } from "./checkpoint.js";
import { e8m0Table } from "./e8m0.js";
import { floatToFp8Tile128 } from "./fp8-blockwise.js";
import { type LogicalTensor, logicalRows, readLogicalRows } from "./logical.js";
import { encodeMxfp4, MXFP4_BLOCK, MXFP4_BLOCK_BYTES } from "./mxfp4.js";
import { mxfp4ToFp8Block32, mxfp4ToFp8Tile128, type TileReport } from "./mxfp4-to-fp8.js";

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

/** Runs one job against an open source checkpoint; the same code runs in workers and inline. */
export async function runJob(ck: Checkpoint, job: Job): Promise<JobResult> {
  const { tensor, start, end } = job;
  const { cols } = logicalRows(tensor);
  const subject = `${ck.tensor(tensor.parts[0]).file}#${tensor.name}`;
  switch (job.op) {
    case "copy":
      return { parts: [await ck.readTensorRange(job.stored, start * job.rowBytes, end * job.rowBytes)] };
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
    case "float-to-fp8":
      return perMatrix(tensor, start, end, async (s, e, rows) => {
        const { elements, scaleInv } = floatToFp8Tile128(await readLogicalRows(ck, tensor, s, e), rows, cols);
        return { parts: [elements, bytesOf(scaleInv)] };
      });
    case "float-to-mxfp4": {
      const { blocks, scales } = encodeMxfp4(await readLogicalRows(ck, tensor, start, end), subject);
      return { parts: [blocks, scales] };
    }
    case "mxfp4-to-fp8": {
      const groups = cols / MXFP4_BLOCK;
      const [blocksName, scalesName] = tensor.parts as [string, string];
      const read = async (s: number, e: number) => ({
        blocks: await ck.readTensorRange(
          blocksName,
          s * groups * MXFP4_BLOCK_BYTES,
          e * groups * MXFP4_BLOCK_BYTES,
        ),
        scales: await ck.readTensorRange(scalesName, s * groups, e * groups),
      });
      if (job.block === "block32") {
        const { blocks, scales } = await read(start, end);
        const elements = mxfp4ToFp8Block32(blocks, scales, subject);
        const table = e8m0Table();
        return { parts: [elements, bytesOf(Float32Array.from(scales, (code) => table[code] as number))] };
      }
      const matrixRows = tensor.shape.at(-2) as number;
      return perMatrix(tensor, start, end, async (s, e, rows) => {
        const { blocks, scales } = await read(s, e);
        const result = mxfp4ToFp8Tile128(
          blocks,
          scales,
          rows,
          cols,
          job.allowInexact,
          subject,
          s % matrixRows,
        );
        return { parts: [result.elements, bytesOf(result.scaleInv)], report: result };
      });
    }
  }
}

/**
 * Splits rows [start, end) at matrix boundaries (a matrix is the last two dimensions) so tile
 * kernels see one band of one matrix at a time, and joins their outputs in order.
 */
async function perMatrix(
  tensor: LogicalTensor,
  start: number,
  end: number,
  band: (start: number, end: number, rows: number) => Promise<JobResult>,
): Promise<JobResult> {
  const matrixRows = tensor.shape.length >= 2 ? (tensor.shape.at(-2) as number) : 1;
  const results: JobResult[] = [];
  for (let s = start; s < end; ) {
    const e = Math.min(end, (Math.floor(s / matrixRows) + 1) * matrixRows);
    results.push(await band(s, e, e - s));
    s = e;
  }
  const partCount = results[0]?.parts.length ?? 0;
  const parts = Array.from({ length: partCount }, (_, k) =>
    concat(results.map((r) => r.parts[k] as Uint8Array)),
  );
  const reports = results.flatMap((r) => (r.report ? [r.report] : []));
  if (reports.length === 0) return { parts };
  return {
    parts,
    report: {
      inexactTiles: reports.flatMap((r) => r.inexactTiles),
      maxAbsError: Math.max(...reports.map((r) => r.maxAbsError)),
      maxRelError: Math.max(...reports.map((r) => r.maxRelError)),
    },
  };
}

function concat(arrays: Uint8Array[]): Uint8Array {
  if (arrays.length === 1) return arrays[0] as Uint8Array;
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

/** Bytes of source data one row of the job reads, for chunking and progress. */
export function sourceRowBytes(ck: Checkpoint, tensor: LogicalTensor): number {
  const { rows } = logicalRows(tensor);
  if (rows === 0) return 0;
  return tensor.parts.reduce((n, part) => n + ck.tensor(part).byteLength, 0) / rows;
}
