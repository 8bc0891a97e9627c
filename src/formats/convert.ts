import { basename, join } from "node:path";
import { BringupError } from "../common/errors.js";
import { type Checkpoint, openCheckpoint, writeShardIndex } from "./checkpoint.js";
import { copyCompanions } from "./companions.js";
import {
  type ConvertTask,
  type JobOutcome,
  mergeRoundings,
  partBytes,
  type Rounding,
  runJob,
  Scratch,
} from "./convert-jobs.js";
import {
  converting,
  type Fp8Block,
  jobsOf,
  type Plan,
  type PlanOptions,
  planTensors,
  quantizing,
  STACKED_WEIGHTS_KEY,
  stackedWeights,
} from "./convert-plan.js";
import { checkFreeSpace, findInexactTiles, writeOutput } from "./convert-preflight.js";
import { dtypeBytes, elementCount } from "./dtypes.js";
import { logicalTensors } from "./logical.js";
import { describeQuantization, keptBySource, readModelConfig } from "./quantization-config.js";
import type { TensorLayout } from "./safetensors-header.js";
import { SafetensorsWriter } from "./safetensors-writer.js";
import { compareCheckpointValues } from "./verify.js";
import { defaultWorkers, siblingModule, WorkerPool } from "./worker-pool.js";

export type { ConvertTarget, Fp8Block } from "./convert-plan.js";

export interface ConvertProgress {
  readonly doneBytes: number;
  readonly totalBytes: number;
  readonly tensor: string;
}

export interface ConvertOptions extends PlanOptions {
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
/** Output shards written at once: with hundreds of shards, open files stay few (see FileHandles). */
const SHARDS_AT_ONCE = 8;

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
    const plans = planTensors(
      ck,
      logicalTensors(ck.tensors, (name) => ck.find(name)),
      options,
      {
        kept: keptBySource(sourceConfig),
        powerOfTwoScales:
          sourceQuantization?.quant_method === "fp8" && sourceQuantization.scale_fmt === "ue8m0",
      },
      options.exclude ?? DEFAULT_KEEP,
    );
    // Only quantized weights have a quantization_config to describe: without one, no map of every weight.
    const quantization = plans.some((p) => p.written.kind !== "plain")
      ? describeQuantization(new Map(plans.map((p) => [p.weight, p.written])), sourceConfig, output)
      : undefined;
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
      const inexactTiles = await findInexactTiles(ck, converting(plans), options.signal);
      if (inexactTiles.length > 0)
        throw inexactError(
          source,
          inexactTiles.map((t) => [t.name, t]),
        );
    }

    const chunkBytes = options.chunkBytes ?? 16 * 2 ** 20;
    const totalBytes = ck.byteLength;
    const inexact = new Map<Plan, { tiles: number; span: number; abs: number; rel: number }>();
    const roundings = new Map<Plan, Rounding>();
    let outputBytes = 0;
    const copiedFiles: string[] = [];

    await writeOutput(output, async (dir: string) => {
      const writers = new Map<string, SafetensorsWriter>();
      // Jobs dispatched and not yet done, and shards finishing; they never reject (the first failure is kept).
      const running = new Set<Promise<void>>();
      let pool: WorkerPool<ConvertTask, JobOutcome> | undefined;
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
        // On the calling thread, jobs run one at a time, in order; workers start with the first job.
        const scratch = new Scratch();
        let inline: Promise<unknown> = Promise.resolve();
        const execute = (task: ConvertTask): Promise<JobOutcome> => {
          if (workerCount > 0) {
            pool ??= new WorkerPool(siblingModule("convert-worker", import.meta.url), workerCount, {
              source,
            });
            return pool.run(task);
          }
          const next = inline.then(() => runJob(ck, task.job, task.target, scratch));
          inline = next.catch(() => undefined);
          return next;
        };
        // Each job writes its parts in place where the writer reserved them, so jobs finish in any
        // order; two per worker keep each one busy.
        const window = 2 * Math.max(1, workerCount);
        let doneBytes = 0;
        // A few shards at a time, taking turns one job each so their files are written side by side;
        // each shard's file is finished once its jobs are all made and done. Jobs are made as they go.
        dispatch: for (let first = 0; first < shardLayouts.length; first += SHARDS_AT_ONCE) {
          const group: ShardTurn[] = [];
          for (const { shard, layouts, metadata } of shardLayouts.slice(first, first + SHARDS_AT_ONCE)) {
            writers.set(shard, await SafetensorsWriter.create(join(dir, shard), layouts, metadata));
            group.push({
              shard,
              jobs: jobsOf(ck, byShard.get(shard) ?? [], chunkBytes),
              made: false,
              left: 0,
            });
          }
          const finishing = (turn: ShardTurn) => {
            if (turn.made && turn.left === 0 && failure === undefined)
              track(finishShard(writers, turn.shard));
          };
          for (let busy = true; busy; ) {
            busy = false;
            for (const turn of group) {
              if (turn.made) continue;
              const next = turn.jobs.next();
              if (next.done === true) {
                turn.made = true;
                finishing(turn);
                continue;
              }
              busy = true;
              while (running.size >= window) await Promise.race(running);
              if (failure === undefined && options.signal?.aborted === true)
                failure = { error: interrupted(output) };
              if (failure !== undefined) break dispatch;
              const { plan, job, bytes } = next.value;
              const writer = writers.get(turn.shard) as SafetensorsWriter;
              const sizes = partBytes(job);
              const outputs = plan.outputs;
              const positions = sizes.map((n, i) => writer.reserve((outputs[i] as TensorLayout).name, n));
              outputBytes += sizes.reduce((a, b) => a + b, 0);
              turn.left += 1;
              track(
                execute({ job, target: { path: writer.temporaryPath, positions } }).then(
                  ({ report, rounded }) => {
                    doneBytes += bytes;
                    options.onProgress?.({ doneBytes, totalBytes, tensor: job.tensor.name });
                    turn.left -= 1;
                    finishing(turn);
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
        const weightMap = new Map<string, string>();
        let total = 0;
        for (const plan of plans) {
          for (const out of plan.outputs) {
            weightMap.set(out.name, plan.shard);
            total += elementCount(out.shape) * dtypeBytes(out.dtype);
          }
        }
        await writeShardIndex(dir, weightMap, total);
      }
      const stacked = stackedWeights(plans, sourceConfig);
      const editConfig = (config: Record<string, unknown>) => {
        if (quantization === undefined) delete config.quantization_config;
        else config.quantization_config = quantization;
        if (stacked === undefined) delete config[STACKED_WEIGHTS_KEY];
        else config[STACKED_WEIGHTS_KEY] = stacked;
        if (options.to === "bf16" && "torch_dtype" in config) config.torch_dtype = "bfloat16";
      };
      const fallback =
        quantization === undefined && stacked === undefined
          ? undefined
          : {
              ...(quantization === undefined ? {} : { quantization_config: quantization }),
              ...(stacked === undefined ? {} : { [STACKED_WEIGHTS_KEY]: stacked }),
            };
      copiedFiles.push(...(await copyCompanions(source, dir, editConfig, fallback)));
      checkAborted(options.signal, output);
      if (options.verify === true)
        await proveExact(
          ck,
          dir,
          output,
          plans,
          (plan) => exact(plan, inexact, roundings),
          workerCount,
          options.signal,
        );
      checkAborted(options.signal, output);
    });
    return {
      source,
      output,
      target: options.to,
      tensors: plans.map((plan) => conversion(plan, inexact.get(plan), roundings.get(plan), options)),
      sourceBytes: totalBytes,
      outputBytes,
      copiedFiles,
      ...(quantization === undefined ? {} : { quantizationConfig: quantization }),
    };
  } finally {
    await ck.close();
  }
}

/** Whether every value of a plan's weight was carried exactly: nothing rounded, nothing quantized. */
function exact(
  plan: Plan,
  inexact: ReadonlyMap<Plan, unknown>,
  roundings: ReadonlyMap<Plan, unknown>,
): boolean {
  return !inexact.has(plan) && !roundings.has(plan) && !quantizing(plan);
}

/** What a plan did, built once from what its jobs found; a weight claimed exact was proved so with `verify`. */
function conversion(
  plan: Plan,
  bad: { tiles: number; span: number; abs: number; rel: number } | undefined,
  rounded: Rounding | undefined,
  options: ConvertOptions,
): TensorConversion {
  const carried = bad === undefined && rounded === undefined && !quantizing(plan);
  return {
    name: plan.tensor.name,
    from: plan.from,
    to: plan.to,
    exact: carried,
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
    ...(carried && options.verify === true ? { verified: true } : {}),
  };
}

/** One output shard being written: its jobs, made as they go, whether all are made, and how many are running. */
interface ShardTurn {
  readonly shard: string;
  readonly jobs: ReturnType<typeof jobsOf>;
  made: boolean;
  left: number;
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

/**
 * Decodes source (the checkpoint already open) and output and compares every weight claimed exact,
 * bit for bit. Only the comparisons that differ are kept; the report says which of the rest were proved.
 */
async function proveExact(
  source: Checkpoint,
  dir: string,
  output: string,
  plans: readonly Plan[],
  exact: (plan: Plan) => boolean,
  workers: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const lossy = new Set(plans.filter((plan) => !exact(plan)).map((plan) => plan.weight));
  const report = await compareCheckpointValues(source, dir, {
    workers,
    ...(signal ? { signal } : {}),
    differing: true,
    select: (weight) => !lossy.has(weight),
  });
  const compared = report.weights[0];
  const weight = compared?.name ?? report.onlyInA[0];
  if (weight === undefined) return;
  throw new BringupError(
    "CONVERSION_NOT_EXACT",
    `${output}: weight ${JSON.stringify(weight)} does not decode to the source's values` +
      `${compared === undefined ? " (missing)" : ` (${compared.mismatches} differ, first at ${compared.firstMismatch})`}; this is a bug, please report it. Nothing was written.`,
    { subject: `${output}#${weight}` },
  );
}
