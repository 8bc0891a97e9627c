import { createHash, hash as digest } from "node:crypto";
import { BringupError } from "../common/errors.js";
import { type Checkpoint, openCheckpoint } from "./checkpoint.js";
import { decodeToFloat32 } from "./decode.js";
import { elementCount } from "./dtypes.js";
import {
  counterpart,
  formatName,
  fp8ScaleRows,
  type LogicalTensor,
  logicalRows,
  logicalTensors,
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
 * sha256 of the stored bytes of a weight of x and one of y, weight after weight in the order asked,
 * one at a time through one buffer: the one string twice where they are the same.
 */
class Checksums {
  readonly #buffer = new Uint8Array(CHUNK_BYTES);
  #last: Promise<unknown> = Promise.resolve();

  constructor(
    readonly x: Checkpoint,
    readonly y: Checkpoint,
  ) {}

  of(a: LogicalTensor, b: LogicalTensor): Promise<readonly [string, string]> {
    const sums = this.#last.then(async () => {
      const sumA = await checksum(this.x, a, this.#buffer);
      const sumB = await checksum(this.y, b, this.#buffer);
      return [sumA, sumA === sumB ? sumA : sumB] as const;
    });
    this.#last = sums.catch(() => undefined);
    return sums;
  }
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
  return compare(pathA, pathB, options, true) as Promise<VerifyReport>;
}

/**
 * verifyCheckpoints without the checksums: only whether the decoded values are the same. `a` may be
 * a checkpoint already open (it stays open); with `differing`, the report lists only the weights
 * whose values differ, as a checkpoint of hundreds of thousands of weights would make as many; with
 * `select`, only the weights it accepts are compared (and looked for on either side).
 */
export async function compareCheckpointValues(
  a: string | Checkpoint,
  pathB: string,
  options: VerifyOptions & {
    readonly differing?: boolean;
    readonly select?: (weight: string) => boolean;
  } = {},
): Promise<ComparisonReport<ValueComparison>> {
  return compare(a, pathB, options, false, options.differing === true, options.select);
}

type Pair = { a: LogicalTensor; b: LogicalTensor };

/** What a weight without values compares as. */
const IDENTICAL: RowsComparison = { mismatches: 0, maxAbsDifference: 0 };
/**
 * Weights compared at once, their results kept until the ones before them are done. Each weight's
 * row ranges share the lanes of the workers, so this bounds only what waits: a few small objects
 * each, however many weights a checkpoint holds.
 */
const WEIGHTS_AT_ONCE = 64;

/**
 * The comparison both of those make; with `hashing`, each weight's checksums too, computed while
 * the values are compared: then each weight is a WeightComparison. Both checkpoints are read one
 * weight at a time, paired through their own name maps, so its memory is what the two open
 * checkpoints hold and a window of weights, not a list of every weight or pair.
 */
async function compare(
  a: string | Checkpoint,
  pathB: string,
  options: VerifyOptions,
  hashing: boolean,
  differing = false,
  select: (weight: string) => boolean = () => true,
): Promise<ComparisonReport<ValueComparison | WeightComparison>> {
  const workerCount = options.workers ?? defaultWorkers();
  const x = typeof a === "string" ? await openCheckpoint(a) : a;
  const pathA = typeof a === "string" ? a : x.path;
  try {
    const y = await openCheckpoint(pathB);
    const [findX, findY] = [(name: string) => x.find(name), (name: string) => y.find(name)];
    // Two row ranges per worker keep each one busy.
    const lanes = new Lanes(2 * Math.max(1, workerCount));
    const sums = hashing ? new Checksums(x, y) : undefined;
    let pool: WorkerPool<RowsJob, RowsComparison> | undefined;
    const interrupted = () => {
      if (options.signal?.aborted === true)
        throw new BringupError("INTERRUPTED", `comparing ${pathA} with ${pathB} was interrupted.`);
    };
    const rows = (job: RowsJob) =>
      lanes.run(() => {
        interrupted();
        if (workerCount === 0) return compareRows(x, y, job);
        pool ??= new WorkerPool(siblingModule("verify-worker", import.meta.url), workerCount, {
          a: pathA,
          b: pathB,
        });
        return pool.run(job);
      });
    const weights: (ValueComparison | WeightComparison)[] = [];
    const onlyInA: string[] = [];
    const onlyInB: string[] = [];
    let ok = true;
    function* pairs(): Generator<Pair> {
      for (const weight of logicalTensors(x.tensors, findX)) {
        interrupted();
        if (!select(weight.name)) continue;
        const other = counterpart(weight, findY);
        if (other === undefined) onlyInA.push(weight.name);
        else yield { a: weight, b: other };
      }
    }
    try {
      await inOrder(
        pairs(),
        WEIGHTS_AT_ONCE,
        async ({ a, b }) => {
          const same = a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
          const checksums = sums?.of(a, b);
          const values = same ? await compareValues(a, b, rows, lanes.size) : undefined;
          return comparison(a, b, values, await checksums);
        },
        (weight) => {
          ok &&= weight.valuesIdentical;
          if (!(differing && weight.valuesIdentical)) weights.push(weight);
        },
      );
      for (const b of logicalTensors(y.tensors, findY))
        if (select(b.name) && counterpart(b, findX) === undefined) onlyInB.push(b.name);
      ok &&= onlyInA.length === 0 && onlyInB.length === 0;
      return { a: pathA, b: pathB, ok, weights, onlyInA, onlyInB };
    } finally {
      await pool?.close();
      await y.close();
    }
  } finally {
    if (typeof a === "string") await x.close();
  }
}

/**
 * How the decoded values of a and b (of one shape) compare: in row ranges of VALUE_CHUNK_BYTES,
 * run by `rows` as lanes come free, summed as they come back.
 */
async function compareValues(
  a: LogicalTensor,
  b: LogicalTensor,
  rows: (job: RowsJob) => Promise<RowsComparison>,
  lanes: number,
): Promise<RowsComparison> {
  if (elementCount(a.shape) === 0) return IDENTICAL;
  const [shortA, shortB] = shortRows([a, b]) as [LogicalTensor, LogicalTensor];
  const { rows: count, cols } = logicalRows(shortA);
  const step = Math.max(1, Math.floor(VALUE_CHUNK_BYTES / 4 / Math.max(1, cols)));
  let mismatches = 0;
  let firstMismatch: number | undefined;
  let maxAbsDifference = 0;
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const start = next;
      next = Math.min(count, start + step);
      const part = await rows({ a: shortA, b: shortB, start, end: next });
      mismatches += part.mismatches;
      if (
        part.firstMismatch !== undefined &&
        (firstMismatch === undefined || part.firstMismatch < firstMismatch)
      )
        firstMismatch = part.firstMismatch;
      maxAbsDifference = Math.max(maxAbsDifference, part.maxAbsDifference);
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, Math.ceil(count / step)) }, lane));
  return { mismatches, ...(firstMismatch === undefined ? {} : { firstMismatch }), maxAbsDifference };
}

/**
 * One weight's comparison from its values' (undefined where the shapes differ), and its checksums
 * when there are: one object of one shape, built once, as there may be hundreds of thousands (a
 * member left undefined is one JSON leaves out).
 */
function comparison(
  a: LogicalTensor,
  b: LogicalTensor,
  values: RowsComparison | undefined,
  sums: readonly [string, string] | undefined,
): ValueComparison | WeightComparison {
  return {
    name: a.name,
    formatA: formatName(a),
    formatB: formatName(b),
    valuesIdentical: values?.mismatches === 0,
    mismatches: values?.mismatches ?? Number.NaN,
    firstMismatch: values?.firstMismatch,
    maxAbsDifference: values?.maxAbsDifference ?? Number.NaN,
    sha256A: sums?.[0],
    sha256B: sums?.[1],
    bytesIdentical: sums === undefined ? undefined : sums[0] === sums[1],
  } as ValueComparison | WeightComparison;
}

/** At most `size` tasks running at once; the rest wait their turn, first come first served. */
class Lanes {
  readonly #waiting: (() => void)[] = [];
  #free: number;

  constructor(readonly size: number) {
    this.#free = size;
  }

  async run<R>(task: () => Promise<R>): Promise<R> {
    if (this.#free > 0) this.#free -= 1;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next === undefined) this.#free += 1;
      else next();
    }
  }
}

/**
 * Runs `run` on each item, at most `window` at once, started in order, and hands each result to
 * `done` in item order. On a failure, waits for the runs started to settle, then throws it.
 */
async function inOrder<T, R>(
  items: Iterator<T>,
  window: number,
  run: (item: T) => Promise<R>,
  done: (result: R) => void,
): Promise<void> {
  const queue: Promise<R>[] = [];
  let ended = false;
  try {
    for (;;) {
      while (!ended && queue.length < window) {
        const next = items.next();
        if (next.done === true) ended = true;
        else queue.push(run(next.value));
      }
      const head = queue.shift();
      if (head === undefined) return;
      done(await head);
    }
  } catch (error) {
    await Promise.allSettled(queue);
    throw error;
  }
}
