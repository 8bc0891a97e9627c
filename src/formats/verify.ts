import { createHash, hash as digest } from "node:crypto";
import { BringupError } from "../common/errors.js";
import { type Checkpoint, openCheckpoint } from "./checkpoint.js";
import { decodeToFloat32 } from "./decode.js";
import { elementCount } from "./dtypes.js";
import {
  detectLogicalTensors,
  fp8ScaleRows,
  type LogicalTensor,
  logicalRows,
  type RowBuffers,
  readLogicalRows,
  readLogicalRowsWide,
  shortRows,
  withRowBuffers,
} from "./logical.js";
import { MXFP4_BLOCK } from "./mxfp4.js";
import { defaultWorkers, siblingModule, WorkerPool } from "./worker-pool.js";

/** How one weight's decoded values compare. */
export interface ValueComparison {
  readonly name: string;
  readonly formatA: string;
  readonly formatB: string;
  /** Whether the decoded float32 values are bit for bit the same (NaN matches NaN). */
  readonly valuesIdentical: boolean;
  readonly mismatches: number;
  readonly firstMismatch?: number;
  readonly maxAbsDifference: number;
}

export interface WeightComparison extends ValueComparison {
  /** sha256 of the stored bytes of every part, in order. */
  readonly sha256A: string;
  readonly sha256B: string;
  readonly bytesIdentical: boolean;
}

export interface ComparisonReport<W extends ValueComparison> {
  readonly a: string;
  readonly b: string;
  readonly ok: boolean;
  readonly weights: readonly W[];
  readonly onlyInA: readonly string[];
  readonly onlyInB: readonly string[];
}

export type VerifyReport = ComparisonReport<WeightComparison>;

/** Bytes read at a time for a checksum, into one buffer. */
const CHUNK_BYTES = 16 * 2 ** 20;
/** Float32 bytes of each side a value comparison decodes at a time: several run at once, one per worker and one queued. */
const VALUE_CHUNK_BYTES = 4 * 2 ** 20;

function format(t: LogicalTensor): string {
  return t.kind === "plain" ? t.dtype : t.kind === "fp8" ? `fp8-e4m3 [${t.block.join("x")}]` : t.kind;
}

async function checksum(ck: Checkpoint, t: LogicalTensor, buffer: Uint8Array): Promise<string> {
  const sizes = t.parts.map((part) => ck.tensor(part).byteLength);
  const total = sizes.reduce((n, size) => n + size, 0);
  if (total <= buffer.length) {
    // One read a part and one hash, with no hasher left for the collector: checkpoints of many
    // small tensors would otherwise pile up native hashing state faster than it is collected.
    let at = 0;
    for (const [k, part] of t.parts.entries()) {
      const size = sizes[k] as number;
      await ck.readTensorRange(part, 0, size, buffer.subarray(at, at + size));
      at += size;
    }
    return digest("sha256", buffer.subarray(0, total), "hex");
  }
  const hash = createHash("sha256");
  for (const part of t.parts) {
    const size = ck.tensor(part).byteLength;
    for (let at = 0; at < size; at += buffer.length)
      hash.update(await ck.readTensorRange(part, at, Math.min(size, at + buffer.length), buffer));
  }
  return hash.digest("hex");
}

/**
 * sha256 of the stored bytes of each pair's two weights, one weight after another through one
 * buffer: pair k's at 2k and 2k + 1, the one string twice where they are the same.
 */
async function checksums(x: Checkpoint, y: Checkpoint, pairs: readonly Pair[]): Promise<string[]> {
  const buffer = new Uint8Array(CHUNK_BYTES);
  const sums: string[] = [];
  for (const { a, b } of pairs) {
    const [sumA, sumB] = [await checksum(x, a, buffer), await checksum(y, b, buffer)];
    sums.push(sumA, sumA === sumB ? sumA : sumB);
  }
  return sums;
}

/** How rows [start, end) of weight a compare with the same rows of b, decoded: what a worker is sent. */
export interface RowsJob {
  readonly a: LogicalTensor;
  readonly b: LogicalTensor;
  readonly start: number;
  readonly end: number;
}

export interface RowsComparison {
  readonly mismatches: number;
  /** Element index in the weight. */
  readonly firstMismatch?: number;
  readonly maxAbsDifference: number;
}

/** Decodes rows of a in x and of b in y and compares them bit for bit (NaN matches NaN). */
export function compareRows(x: Checkpoint, y: Checkpoint, job: RowsJob): Promise<RowsComparison> {
  return withRowBuffers(2, (bufferA, bufferB) =>
    compareDecoded(x, y, job, bufferA as RowBuffers, bufferB as RowBuffers),
  );
}

async function compareDecoded(
  x: Checkpoint,
  y: Checkpoint,
  job: RowsJob,
  bufferA: RowBuffers,
  bufferB: RowBuffers,
): Promise<RowsComparison> {
  const { a, b, start, end } = job;
  const { cols } = logicalRows(a);
  const va = await readLogicalRows(x, a, start, end, bufferA);
  const vb = await readLogicalRows(y, b, start, end, bufferB);
  // A value past float32's range decodes to an infinity, which would hide a difference between two
  // such values (6 * 2^127 and 4 * 2^127): rows whose scales allow that are compared in float64.
  if ((await mayOverflow(x, a, start, end)) || (await mayOverflow(y, b, start, end))) {
    return differences(
      await readLogicalRowsWide(x, a, start, end),
      await readLogicalRowsWide(y, b, start, end),
      start * cols,
    );
  }
  // The usual case, every bit the same, is one memcmp; only a difference is looked at value by value.
  if (
    Buffer.from(va.buffer, va.byteOffset, va.byteLength).equals(
      Buffer.from(vb.buffer, vb.byteOffset, vb.byteLength),
    )
  )
    return { mismatches: 0, maxAbsDifference: 0 };
  return differences(va, vb, start * cols);
}

/** MXFP4 scale codes from which an element can pass float32's largest value: 6 * 2^126 does. */
const OVERFLOWING_SCALES = [253, 254];
/** FP8 scales from which an element can: 448 * scale at or past 2^128. */
const OVERFLOWING_FP8_SCALE = 2 ** 128 / 448;

/**
 * Whether rows [start, end) of a weight may decode past float32's range, from its scales alone (a
 * sixteenth of an MXFP4 weight's bytes, far less for FP8): scanning the decoded values instead cost
 * more than decoding them. F64 always may, and is compared in float64.
 */
async function mayOverflow(ck: Checkpoint, t: LogicalTensor, start: number, end: number): Promise<boolean> {
  const { cols } = logicalRows(t);
  if (t.kind === "plain") return t.dtype === "F64";
  if (t.kind === "mxfp4") {
    const groups = cols / MXFP4_BLOCK;
    const scales = Buffer.from(await ck.readTensorRange(t.parts[1], start * groups, end * groups));
    return OVERFLOWING_SCALES.some((code) => scales.includes(code));
  }
  if (end <= start) return false;
  const { scaleStart, scaleEnd } = fp8ScaleRows(t, start, end);
  const bytes = await ck.readTensorRange(t.parts[1], scaleStart, scaleEnd);
  const scales = decodeToFloat32("F32", bytes, t.parts[1]);
  return scales.some((s) => !(Math.abs(s) < OVERFLOWING_FP8_SCALE));
}

/** Element by element (NaN matches NaN), the first mismatch counted from `first`. */
function differences(
  va: Float32Array | Float64Array,
  vb: Float32Array | Float64Array,
  first: number,
): RowsComparison {
  let mismatches = 0;
  let firstMismatch: number | undefined;
  let maxAbsDifference = 0;
  for (let i = 0; i < va.length; i += 1) {
    const [p, q] = [va[i] as number, vb[i] as number];
    if (Object.is(p, q) || (Number.isNaN(p) && Number.isNaN(q))) continue;
    mismatches += 1;
    firstMismatch ??= first + i;
    const gap = Math.abs(p - q);
    maxAbsDifference = Math.max(maxAbsDifference, Number.isNaN(gap) ? Number.POSITIVE_INFINITY : gap);
  }
  return { mismatches, ...(firstMismatch === undefined ? {} : { firstMismatch }), maxAbsDifference };
}

export interface VerifyOptions {
  /** Worker threads decoding and comparing values; 0 does it on the calling thread. Default: defaultWorkers(). */
  readonly workers?: number;
  /** Stops the comparison early: it rejects with INTERRUPTED. */
  readonly signal?: AbortSignal;
}

/**
 * Compares two checkpoints weight by weight, whatever their formats: checksums of the stored bytes,
 * and bit identity of the decoded values (so MXFP4 and its exact FP8 re-encoding verify as equal).
 * Values are compared in row ranges on worker threads while this thread hashes the stored bytes.
 */
export async function verifyCheckpoints(
  pathA: string,
  pathB: string,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  return compare(pathA, pathB, options, checksums) as Promise<VerifyReport>;
}

/**
 * verifyCheckpoints without the checksums: only whether the decoded values are the same. `a` may be
 * a checkpoint already open (it stays open); with `differing`, the report lists only the weights
 * whose values differ, as a checkpoint of hundreds of thousands of weights would make as many.
 */
export async function compareCheckpointValues(
  a: string | Checkpoint,
  pathB: string,
  options: VerifyOptions & { readonly differing?: boolean } = {},
): Promise<ComparisonReport<ValueComparison>> {
  return compare(a, pathB, options, undefined, options.differing === true);
}

type Pair = { a: LogicalTensor; b: LogicalTensor };

/** The row comparisons of a weight without values. */
const NO_ROWS: readonly RowsComparison[] = [];

/**
 * The comparison both of those make; with `hash`, each weight's checksums too (as `checksums`
 * gives them), computed while the values are compared: then each weight is a WeightComparison.
 */
async function compare(
  a: string | Checkpoint,
  pathB: string,
  options: VerifyOptions,
  hash?: (x: Checkpoint, y: Checkpoint, pairs: readonly Pair[]) => Promise<string[]>,
  differing = false,
): Promise<ComparisonReport<ValueComparison | WeightComparison>> {
  const workerCount = options.workers ?? defaultWorkers();
  const x = typeof a === "string" ? await openCheckpoint(a) : a;
  const pathA = typeof a === "string" ? a : x.path;
  try {
    const y = await openCheckpoint(pathB);
    try {
      const [la, lb] = [detectLogicalTensors(x.tensors), detectLogicalTensors(y.tensors)];
      const byName = new Map(lb.map((t) => [t.name, t]));
      const pairs = la.flatMap((a) => {
        const b = byName.get(a.name);
        return b === undefined ? [] : [{ a, b }];
      });
      const sameShape = ({ a, b }: Pair) =>
        a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
      // A weight without values has nothing to compare (and views of it would be garbage by the hundred thousand).
      const jobs = pairs
        .filter((pair) => sameShape(pair) && elementCount(pair.a.shape) > 0)
        .flatMap((pair) => {
          const [a, b] = shortRows([pair.a, pair.b]) as [LogicalTensor, LogicalTensor];
          const { rows, cols } = logicalRows(a);
          const step = Math.max(1, Math.floor(VALUE_CHUNK_BYTES / 4 / Math.max(1, cols)));
          return Array.from({ length: Math.ceil(rows / step) }, (_, k) => ({
            a,
            b,
            start: k * step,
            end: Math.min(rows, (k + 1) * step),
          }));
        });
      const pool =
        workerCount > 0 && jobs.length > 0
          ? new WorkerPool<RowsJob, RowsComparison>(
              siblingModule("verify-worker", import.meta.url),
              workerCount,
              { a: pathA, b: pathB },
            )
          : undefined;
      try {
        const [values, sums] = await Promise.all([
          runInOrder(jobs, 2 * Math.max(1, workerCount), (job) => {
            if (options.signal?.aborted === true) {
              throw new BringupError("INTERRUPTED", `comparing ${pathA} with ${pathB} was interrupted.`);
            }
            return pool?.run(job) ?? compareRows(x, y, job);
          }),
          hash?.(x, y, pairs),
        ]);
        const byWeight = new Map<string, RowsComparison[]>();
        for (const [k, job] of jobs.entries()) {
          const parts = byWeight.get(job.a.name) ?? [];
          parts.push(values[k] as RowsComparison);
          byWeight.set(job.a.name, parts);
        }
        const weights: (ValueComparison | WeightComparison)[] = [];
        for (const [k, { a, b }] of pairs.entries()) {
          const parts = sameShape({ a, b }) ? (byWeight.get(a.name) ?? NO_ROWS) : undefined;
          if (differing && parts?.every((p) => p.mismatches === 0) === true) continue;
          weights.push(comparison(a, b, parts, sums, k));
        }
        const namesA = new Set(la.map((t) => t.name));
        const onlyInA = la.filter((t) => !byName.has(t.name)).map((t) => t.name);
        const onlyInB = lb.filter((t) => !namesA.has(t.name)).map((t) => t.name);
        const ok = onlyInA.length === 0 && onlyInB.length === 0 && weights.every((w) => w.valuesIdentical);
        return { a: pathA, b: pathB, ok, weights, onlyInA, onlyInB };
      } finally {
        await pool?.close();
      }
    } finally {
      await y.close();
    }
  } finally {
    if (typeof a === "string") await x.close();
  }
}

/**
 * One weight's comparison from its row ranges' (undefined where the shapes differ), and its
 * checksums when there are: one object of one shape, built once, as there may be hundreds of
 * thousands (a member left undefined is one JSON leaves out).
 */
function comparison(
  a: LogicalTensor,
  b: LogicalTensor,
  parts: readonly RowsComparison[] | undefined,
  sums: readonly string[] | undefined,
  k: number,
): ValueComparison | WeightComparison {
  const mismatches = parts?.reduce((n, p) => n + p.mismatches, 0) ?? Number.NaN;
  const [sha256A, sha256B] = [sums?.[2 * k], sums?.[2 * k + 1]];
  return {
    name: a.name,
    formatA: format(a),
    formatB: format(b),
    valuesIdentical: mismatches === 0,
    mismatches,
    firstMismatch: parts?.find((p) => p.firstMismatch !== undefined)?.firstMismatch,
    maxAbsDifference: parts === undefined ? Number.NaN : Math.max(0, ...parts.map((p) => p.maxAbsDifference)),
    sha256A,
    sha256B,
    bytesIdentical: sums === undefined ? undefined : sha256A === sha256B,
  } as ValueComparison | WeightComparison;
}

/** Runs `run` on every item, at most `window` at once, started in order; results in item order. */
async function runInOrder<T, R>(
  items: readonly T[],
  window: number,
  run: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const k = next++;
      results[k] = await run(items[k] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(window, items.length) }, lane));
  return results;
}
