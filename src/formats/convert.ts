import { basename, join } from "node:path";
import { BringupError } from "../common/errors.js";
import { type Checkpoint, openCheckpoint, writeShardIndex } from "./checkpoint.js";
import { copyCompanions } from "./companions.js";
import {
  type ConvertTask,
  isTiled,
  type Job,
  type JobOp,
  type JobOutcome,
  mergeRoundings,
  partBytes,
  type Rounding,
  rowRanges,
  runJob,
  Scratch,
  sourceRowBytes,
} from "./convert-jobs.js";
import { checkFreeSpace, findInexactTiles, writeOutput } from "./convert-preflight.js";
import { type Dtype, dtypeBytes, elementCount } from "./dtypes.js";
import {
  detectLogicalTensors,
  FP8_BLOCKS,
  type LogicalTensor,
  logicalRows,
  scaleGridShape,
  shortRows,
} from "./logical.js";
import { MXFP4_BLOCK, MXFP4_BLOCK_BYTES } from "./mxfp4.js";
import { TILE } from "./mxfp4-to-fp8.js";
import {
  describeQuantization,
  keptBySource,
  readModelConfig,
  type WrittenFormat,
} from "./quantization-config.js";
import type { TensorLayout } from "./safetensors-header.js";
import { SafetensorsWriter } from "./safetensors-writer.js";
import { compareCheckpointValues } from "./verify.js";
import { defaultWorkers, siblingModule, WorkerPool } from "./worker-pool.js";

export type ConvertTarget = "bf16" | "fp8" | "mxfp4";
export type Fp8Block = "tile128" | "block32";

export interface ConvertProgress {
  readonly doneBytes: number;
  readonly totalBytes: number;
  readonly tensor: string;
}

export interface ConvertOptions {
  readonly to: ConvertTarget;
  /** FP8 scale layout for MXFP4 sources: 128x128 tiles (default) or the per-32 block scales. */
  readonly fp8Block?: Fp8Block;
  /** Convert tensors that cannot be exact anyway, reporting the largest error. */
  readonly allowInexact?: boolean;
  /** Worker threads; 0 runs everything on the calling thread. Default: defaultWorkers(). */
  readonly workers?: number;
  /** Source bytes per unit of work (default 16 MiB): bounds memory whatever the checkpoint's size. */
  readonly chunkBytes?: number;
  /**
   * Plain float weights (2 or more dimensions) to quantize for an fp8 or mxfp4 target. Quantizing
   * loses precision, so it happens only when asked: by default no plain weight is touched.
   */
  readonly include?: RegExp;
  /** Of those, which to keep anyway (default DEFAULT_KEEP). The source's modules_to_not_convert always are. */
  readonly exclude?: RegExp;
  /** Quantize NaN to NaN and infinities to the largest finite value instead of refusing them. */
  readonly allowNonFinite?: boolean;
  readonly onProgress?: (progress: ConvertProgress) => void;
  /**
   * Prove exactness: before the output appears, decode every weight claimed exact from source and
   * output and compare bit for bit (reads everything again).
   */
  readonly verify?: boolean;
  /** Stops the conversion (Ctrl-C): nothing of the output is left, and it rejects with INTERRUPTED. */
  readonly signal?: AbortSignal;
}

export interface TensorConversion {
  readonly name: string;
  readonly from: string;
  readonly to: string;
  /** Every value is carried exactly (copies, dequantizing, exact re-encodings). */
  readonly exact: boolean;
  /** A plain float weight quantized on request (to fp8 or mxfp4): lossy by design. */
  readonly quantized: boolean;
  /** With `verify`: decoded output compared with decoded source, bit for bit, and found identical. */
  readonly verified?: boolean;
  readonly inexactTiles?: number;
  readonly maxBlockExponentSpan?: number;
  /** Values rounded with `allowInexact` where the target format could not hold them. */
  readonly roundedValues?: number;
  readonly maxAbsError?: number;
  readonly maxRelError?: number;
}

export interface ConvertReport {
  readonly source: string;
  readonly output: string;
  readonly target: string;
  readonly tensors: readonly TensorConversion[];
  readonly sourceBytes: number;
  readonly outputBytes: number;
  readonly copiedFiles: readonly string[];
  /** The quantization_config written into the output's config.json (absent: none). */
  readonly quantizationConfig?: Record<string, unknown>;
}

/** Names that checkpoints usually keep in high precision: embeddings, norms, the head, routers, biases. */
export const DEFAULT_KEEP = /embed|norm|lm_head|router|(^|\.)gate\.weight$|bias$/i;
const FLOATS = new Set<Dtype>(["F32", "F16", "BF16", "F64"]);
/** Output shards written at once: with hundreds of shards, open files stay few (see FileHandles). */
const SHARDS_AT_ONCE = 8;

interface Plan {
  /** The logical weight this plan writes (or a stored part of, when copying). */
  readonly weight: string;
  readonly tensor: LogicalTensor;
  readonly op: JobOp;
  readonly outputs: TensorLayout[];
  readonly shard: string;
  readonly from: string;
  readonly to: string;
  /** How the weight is stored once written. */
  readonly written: WrittenFormat;
}

function describe(tensor: LogicalTensor): string {
  if (tensor.kind === "plain") return tensor.dtype;
  if (tensor.kind === "fp8") return `fp8-e4m3 [${tensor.block.join("x")}]`;
  return "mxfp4";
}

/**
 * How a weight is stored when copied as it is. An FP8 weight's scales are powers of two where the
 * source's config says so (scale_fmt ue8m0), as the copy keeps them.
 */
function formatOf(tensor: LogicalTensor, powerOfTwoScales: boolean): WrittenFormat {
  if (tensor.kind === "plain") return { kind: "plain", dtype: tensor.dtype };
  if (tensor.kind === "fp8") return fp8Written(tensor.shape, tensor.block, powerOfTwoScales);
  return { kind: "mxfp4" };
}

/** An FP8 weight of this shape written with scale blocks `block`, and every layout its scales fit. */
function fp8Written(
  shape: readonly number[],
  block: readonly [number, number],
  powerOfTwoScales: boolean,
): WrittenFormat {
  const grid = scaleGridShape(shape, block).join();
  const blocks = FP8_BLOCKS.filter((b) => scaleGridShape(shape, b).join() === grid);
  return { kind: "fp8", blocks, powerOfTwoScales };
}

function planTensors(
  ck: Checkpoint,
  options: ConvertOptions,
  source: { kept: (weight: string) => boolean; powerOfTwoScales: boolean },
): Plan[] {
  const exclude = options.exclude ?? DEFAULT_KEEP;
  const plans: Plan[] = [];
  const keep = (tensor: LogicalTensor) => {
    for (const part of tensor.parts) {
      const info = ck.tensor(part);
      const count = elementCount(info.shape);
      // Copied as a column of elements, so even a huge 1-D tensor streams in bounded chunks.
      const column: LogicalTensor = {
        kind: "plain",
        name: part,
        shape: [count, 1],
        dtype: info.dtype,
        parts: [part],
      };
      plans.push({
        weight: tensor.name,
        tensor: column,
        op: { op: "copy", stored: part, rowBytes: dtypeBytes(info.dtype) },
        outputs: [{ name: part, dtype: info.dtype, shape: info.shape }],
        shard: basename(info.file),
        from: describe(tensor),
        to: describe(tensor),
        written: formatOf(tensor, source.powerOfTwoScales),
      });
    }
  };
  for (const tensor of detectLogicalTensors(ck.tensors)) {
    const shard = basename(ck.tensor(tensor.parts[0]).file);
    const subject = `${ck.tensor(tensor.parts[0]).file}#${tensor.name}`;
    const base = { weight: tensor.name, tensor, shard, from: describe(tensor) };
    const quantizable =
      tensor.kind === "plain" &&
      FLOATS.has(tensor.dtype) &&
      tensor.shape.length >= 2 &&
      options.include?.test(tensor.name) === true &&
      !exclude.test(tensor.name) &&
      !source.kept(tensor.name);
    const [rows, cols] = [tensor.shape.at(-2) ?? 1, tensor.shape.at(-1) ?? 1];
    const lead = tensor.shape.slice(0, -2);
    // Ops that work element by element (or block by block along the elements) read short rows.
    const streamed = shortRows([tensor])[0] as LogicalTensor;
    if (options.to === "bf16" && tensor.kind !== "plain") {
      plans.push({
        ...base,
        tensor: streamed,
        op: { op: "to-bf16", allowInexact: options.allowInexact === true },
        outputs: [{ name: tensor.name, dtype: "BF16", shape: tensor.shape }],
        to: "BF16",
        written: { kind: "plain", dtype: "BF16" },
      });
    } else if (options.to === "fp8" && tensor.kind === "mxfp4") {
      if (tensor.shape.length < 2) {
        throw new BringupError(
          "NOT_REPRESENTABLE",
          `${subject}: a 1-D MXFP4 weight has no rows for FP8 block scales; convert the checkpoint --to bf16, or keep it MXFP4.`,
          { subject },
        );
      }
      const block = options.fp8Block ?? "tile128";
      const grid =
        block === "tile128"
          ? [...lead, Math.ceil(rows / TILE), Math.ceil(cols / TILE)]
          : [...lead, rows, cols / MXFP4_BLOCK];
      plans.push({
        ...base,
        ...(block === "block32" ? { tensor: streamed } : {}),
        op: { op: "mxfp4-to-fp8", block, allowInexact: options.allowInexact === true },
        outputs: [
          { name: tensor.name, dtype: "F8_E4M3", shape: tensor.shape },
          { name: `${tensor.name}_scale_inv`, dtype: "F32", shape: grid },
        ],
        to: `fp8-e4m3 [${block === "tile128" ? "128x128" : "1x32"}]`,
        written: fp8Written(tensor.shape, block === "tile128" ? [TILE, TILE] : [1, MXFP4_BLOCK], true),
      });
    } else if (options.to === "fp8" && quantizable) {
      plans.push({
        ...base,
        op: { op: "float-to-fp8", allowNonFinite: options.allowNonFinite === true },
        outputs: [
          { name: tensor.name, dtype: "F8_E4M3", shape: tensor.shape },
          {
            name: `${tensor.name}_scale_inv`,
            dtype: "F32",
            shape: scaleGridShape(tensor.shape, [TILE, TILE]),
          },
        ],
        to: "fp8-e4m3 [128x128]",
        written: fp8Written(tensor.shape, [TILE, TILE], false),
      });
    } else if (options.to === "mxfp4" && tensor.kind === "fp8") {
      if (cols % MXFP4_BLOCK !== 0) {
        throw new BringupError(
          "NOT_REPRESENTABLE",
          `${subject}: ${cols} columns are not whole MXFP4 blocks of 32; keep the checkpoint FP8 or convert it --to bf16.`,
          { subject },
        );
      }
      plans.push({ ...base, tensor: streamed, ...toMxfp4(tensor, "fp8-to-mxfp4") });
    } else if (options.to === "mxfp4" && quantizable && cols % MXFP4_BLOCK === 0) {
      plans.push({ ...base, ...toMxfp4(tensor, "float-to-mxfp4") });
    } else {
      keep(tensor);
    }
  }
  return plans;
}

/** What a plan to MXFP4 writes: `W_blocks` and `W_scales`. */
function toMxfp4(tensor: LogicalTensor, op: "fp8-to-mxfp4" | "float-to-mxfp4") {
  const cols = tensor.shape.at(-1) as number;
  const groups = [...tensor.shape.slice(0, -1), cols / MXFP4_BLOCK];
  return {
    op: { op },
    outputs: [
      { name: `${tensor.name}_blocks`, dtype: "U8" as const, shape: [...groups, MXFP4_BLOCK_BYTES] },
      { name: `${tensor.name}_scales`, dtype: "U8" as const, shape: groups },
    ],
    to: "mxfp4",
    written: { kind: "mxfp4" as const },
  };
}

/** Row ranges of at most about `chunkBytes` of source; tiled ops get whole 128-row bands or whole matrices. */
function chunksOf(ck: Checkpoint, plan: Plan, chunkBytes: number): [number, number][] {
  const { rows } = logicalRows(plan.tensor);
  return rowRanges(plan.tensor, isTiled(plan.op), sourceRowBytes(ck, plan.tensor), chunkBytes, 0, rows);
}

/**
 * Converts a checkpoint (file or directory) into a new directory `output`, tensor by tensor in
 * bounded chunks on worker threads. Everything that can fail without the long work fails first
 * (formats, inexact tiles, disk space); the output directory appears only when everything succeeded.
 */
export async function convertCheckpoint(
  source: string,
  output: string,
  options: ConvertOptions,
): Promise<ConvertReport> {
  const workerCount = options.workers ?? defaultWorkers();
  if (!Number.isSafeInteger(workerCount) || workerCount < 0) {
    throw new BringupError(
      "BAD_OPTION",
      `workers must be a whole number of threads, 0 or more (0 converts on the calling thread); got ${workerCount}.`,
    );
  }
  if (options.allowNonFinite === true && options.to !== "fp8") {
    throw new BringupError(
      "BAD_OPTION",
      `allowNonFinite applies to weights quantized to FP8 only (--to fp8 with --include); MXFP4 has no NaN or infinity to carry them and bf16 carries them as they are, so drop it.`,
    );
  }
  const ck = await openCheckpoint(source);
  try {
    const sourceConfig = await readModelConfig(source);
    const sourceQuantization = sourceConfig?.quantization_config as Record<string, unknown> | undefined;
    const plans = planTensors(ck, options, {
      kept: keptBySource(sourceConfig),
      powerOfTwoScales:
        sourceQuantization?.quant_method === "fp8" && sourceQuantization.scale_fmt === "ue8m0",
    });
    const quantization = describeQuantization(
      new Map(plans.map((p) => [p.weight, p.written])),
      sourceConfig,
      output,
    );
    const byShard = new Map<string, Plan[]>();
    for (const plan of plans) {
      const list = byShard.get(plan.shard) ?? [];
      byShard.set(plan.shard, list);
      list.push(plan);
    }
    // Every source shard has its output shard, one without tensors too (a header of `{}`).
    const shardLayouts = ck.shards.map((s) => ({
      shard: basename(s.path),
      layouts: (byShard.get(basename(s.path)) ?? []).flatMap((p) => p.outputs),
      metadata: s.metadata,
    }));
    checkAborted(options.signal, output);
    await checkFreeSpace(source, output, shardLayouts);
    if (options.allowInexact !== true) {
      const inexactTiles = await findInexactTiles(ck, plans, options.signal);
      if (inexactTiles.length > 0)
        throw inexactError(
          source,
          inexactTiles.map((t) => [t.name, t]),
        );
    }

    const chunkBytes = options.chunkBytes ?? 16 * 2 ** 20;
    const shardJobs = new Map<string, { plan: Plan; job: Job; bytes: number }[]>();
    for (const plan of plans) {
      const rowBytes = sourceRowBytes(ck, plan.tensor);
      const list = shardJobs.get(plan.shard) ?? [];
      shardJobs.set(plan.shard, list);
      for (const [start, end] of chunksOf(ck, plan, chunkBytes)) {
        list.push({
          plan,
          job: { ...plan.op, tensor: plan.tensor, start, end },
          bytes: (end - start) * rowBytes,
        });
      }
    }
    const totalBytes = ck.byteLength;
    const results = new Map<Plan, TensorConversion>();
    const inexact = new Map<Plan, { tiles: number; span: number; abs: number; rel: number }>();
    const roundings = new Map<Plan, Rounding>();
    let outputBytes = 0;
    const copiedFiles: string[] = [];

    await writeOutput(output, async (dir: string) => {
      const writers = new Map<string, SafetensorsWriter>();
      // Jobs dispatched and not yet done, and shards finishing; they never reject (the first failure is kept).
      const running = new Set<Promise<void>>();
      const pool =
        workerCount > 0
          ? new WorkerPool<ConvertTask, JobOutcome>(
              siblingModule("convert-worker", import.meta.url),
              workerCount,
              { source },
            )
          : undefined;
      let failure: { error: unknown } | undefined;
      const track = (work: Promise<unknown>) => {
        const tracked: Promise<void> = work
          .then(
            () => undefined,
            (error: unknown) => {
              failure ??= { error };
            },
          )
          .finally(() => running.delete(tracked));
        running.add(tracked);
      };
      try {
        // On the calling thread, jobs run one at a time, in order.
        const scratch = new Scratch();
        let inline: Promise<unknown> = Promise.resolve();
        const execute = (task: ConvertTask): Promise<JobOutcome> => {
          if (pool) return pool.run(task);
          const next = inline.then(() => runJob(ck, task.job, task.target, scratch));
          inline = next.catch(() => undefined);
          return next;
        };
        // Each job writes its parts in place where the writer reserved them, so jobs finish in any
        // order; two per worker keep each one busy.
        const window = 2 * Math.max(1, workerCount);
        let doneBytes = 0;
        // A few shards at a time, taking turns one job each so their files are written side by side;
        // each shard's file is finished once its last job is done.
        dispatch: for (let first = 0; first < shardLayouts.length; first += SHARDS_AT_ONCE) {
          const group = shardLayouts.slice(first, first + SHARDS_AT_ONCE);
          const remaining = new Map<string, number>();
          for (const { shard, layouts, metadata } of group) {
            const writer = await SafetensorsWriter.create(join(dir, shard), layouts, metadata);
            writers.set(shard, writer);
            remaining.set(shard, shardJobs.get(shard)?.length ?? 0);
            if (remaining.get(shard) === 0) track(finishShard(writers, shard));
          }
          const lists = group.map(({ shard }) => shardJobs.get(shard) ?? []);
          const turns = Math.max(0, ...lists.map((l) => l.length));
          for (let k = 0; k < turns; k += 1) {
            for (const list of lists) {
              const entry = list[k];
              if (entry === undefined) continue;
              while (running.size >= window) await Promise.race(running);
              if (failure === undefined && options.signal?.aborted === true)
                failure = { error: interrupted(output) };
              if (failure !== undefined) break dispatch;
              const { plan, job, bytes } = entry;
              const writer = writers.get(plan.shard) as SafetensorsWriter;
              const sizes = partBytes(job);
              const positions = sizes.map((n, i) =>
                writer.reserve((plan.outputs[i] as TensorLayout).name, n),
              );
              outputBytes += sizes.reduce((a, b) => a + b, 0);
              track(
                execute({ job, target: { path: writer.temporaryPath, positions } }).then(
                  ({ report, rounded }) => {
                    doneBytes += bytes;
                    options.onProgress?.({ doneBytes, totalBytes, tensor: plan.tensor.name });
                    const left = (remaining.get(plan.shard) as number) - 1;
                    remaining.set(plan.shard, left);
                    if (left === 0 && failure === undefined) track(finishShard(writers, plan.shard));
                    if (rounded !== undefined) {
                      const seen = roundings.get(plan);
                      roundings.set(plan, seen === undefined ? rounded : mergeRoundings([seen, rounded]));
                    }
                    if (report === undefined || report.inexactTiles.length === 0) return;
                    const seen = inexact.get(plan) ?? { tiles: 0, span: 0, abs: 0, rel: 0 };
                    inexact.set(plan, {
                      tiles: seen.tiles + report.inexactTiles.length,
                      span: Math.max(seen.span, ...report.inexactTiles.map((t) => t.blockExponentSpan)),
                      abs: Math.max(seen.abs, report.maxAbsError),
                      rel: Math.max(seen.rel, report.maxRelError),
                    });
                  },
                ),
              );
            }
          }
        }
        while (running.size > 0) await Promise.all(running);
        if (failure !== undefined) throw failure.error;
        for (const plan of plans) {
          const bad = inexact.get(plan);
          const rounded = roundings.get(plan);
          results.set(plan, {
            name: plan.tensor.name,
            from: plan.from,
            to: plan.to,
            exact: bad === undefined && rounded === undefined && !quantizing(plan),
            quantized: quantizing(plan),
            ...(bad === undefined ? {} : { inexactTiles: bad.tiles, maxBlockExponentSpan: bad.span }),
            ...(bad !== undefined && options.allowInexact === true
              ? { maxAbsError: bad.abs, maxRelError: bad.rel }
              : {}),
            ...(rounded === undefined
              ? {}
              : {
                  roundedValues: rounded.values,
                  maxAbsError: rounded.maxAbsError,
                  maxRelError: rounded.maxRelError,
                }),
          });
        }
        if (inexact.size > 0 && options.allowInexact !== true)
          throw inexactError(
            source,
            [...inexact].map(([plan, bad]) => [plan.tensor.name, bad]),
          );
      } finally {
        while (running.size > 0) await Promise.all(running); // no file is removed under a write in flight
        await pool?.close();
        for (const writer of writers.values()) await writer.abort();
      }
      if (ck.indexed || ck.shards.length > 1) {
        const weightMap: Record<string, string> = {};
        for (const plan of plans) for (const out of plan.outputs) weightMap[out.name] = plan.shard;
        const total = plans
          .flatMap((p) => p.outputs)
          .reduce((n, o) => n + elementCount(o.shape) * dtypeBytes(o.dtype), 0);
        await writeShardIndex(dir, weightMap, total);
      }
      const editConfig = (config: Record<string, unknown>) => {
        if (quantization === undefined) delete config.quantization_config;
        else config.quantization_config = quantization;
        if (options.to === "bf16" && "torch_dtype" in config) config.torch_dtype = "bfloat16";
      };
      const fallback = quantization === undefined ? undefined : { quantization_config: quantization };
      copiedFiles.push(...(await copyCompanions(source, dir, editConfig, fallback)));
      checkAborted(options.signal, output);
      if (options.verify === true)
        await proveExact(source, dir, output, results, workerCount, options.signal);
      checkAborted(options.signal, output);
    });
    return {
      source,
      output,
      target: options.to,
      tensors: plans.map((p) => results.get(p) as TensorConversion),
      sourceBytes: totalBytes,
      outputBytes,
      copiedFiles,
      ...(quantization === undefined ? {} : { quantizationConfig: quantization }),
    };
  } finally {
    await ck.close();
  }
}

/** Finishes (renames into place) the shard's file and forgets its writer. */
async function finishShard(writers: Map<string, SafetensorsWriter>, shard: string): Promise<void> {
  const writer = writers.get(shard) as SafetensorsWriter;
  await writer.finish();
  writers.delete(shard);
}

function interrupted(output: string): BringupError {
  return new BringupError("INTERRUPTED", `${output}: the conversion was interrupted; nothing was written.`, {
    subject: output,
  });
}

function checkAborted(signal: AbortSignal | undefined, output: string): void {
  if (signal?.aborted === true) throw interrupted(output);
}

/** The refusal naming every tensor with tiles that cannot be FP8 exactly. */
function inexactError(
  source: string,
  tensors: readonly (readonly [string, { tiles: number; span: number }])[],
): BringupError {
  const lines = tensors.map(
    ([name, bad]) =>
      `  ${name}: ${bad.tiles} tile(s) of 128x128 span up to ${bad.span} binades between their non-zero blocks (at most about 14 fit one E4M3 scale)`,
  );
  return new BringupError(
    "INEXACT_CONVERSION",
    `${source}: ${tensors.length} tensor(s) cannot be FP8 with one scale per 128x128 tile exactly:\n${lines.join("\n")}\nUse --fp8-block block32 (always exact), or --allow-inexact to round them and report the error.`,
    { subject: source },
  );
}

function quantizing(plan: Plan): boolean {
  return plan.op.op === "float-to-fp8" || plan.op.op === "float-to-mxfp4";
}

/** Decodes source and output and compares every weight claimed exact, bit for bit. */
async function proveExact(
  source: string,
  dir: string,
  output: string,
  results: Map<Plan, TensorConversion>,
  workers: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const report = await compareCheckpointValues(source, dir, { workers, ...(signal ? { signal } : {}) });
  const byName = new Map(report.weights.map((w) => [w.name, w]));
  const weights = new Map<string, Plan[]>();
  for (const plan of results.keys()) weights.set(plan.weight, [...(weights.get(plan.weight) ?? []), plan]);
  for (const [weight, plans] of weights) {
    if (!plans.every((p) => results.get(p)?.exact === true)) continue;
    const compared = byName.get(weight);
    if (compared === undefined || !compared.valuesIdentical) {
      throw new BringupError(
        "CONVERSION_NOT_EXACT",
        `${output}: weight ${JSON.stringify(weight)} does not decode to the source's values` +
          `${compared === undefined ? " (missing)" : ` (${compared.mismatches} differ, first at ${compared.firstMismatch})`}; this is a bug, please report it. Nothing was written.`,
        { subject: `${output}#${weight}` },
      );
    }
    for (const plan of plans)
      results.set(plan, { ...(results.get(plan) as TensorConversion), verified: true });
  }
}
