import { BringupError } from "../common/errors.js";
import { appendRecord, type BenchRecord, type Fingerprint } from "../records/index.js";
import type { RunMetrics } from "./metrics.js";
import { armFingerprint, runId as makeRunId, measuredRecord, roundRatio } from "./record-builders.js";
import { dropConnections, type Target } from "./request.js";
import { type RunOptions, runBench } from "./run.js";
import { type BlockTrials, blockedRatioInterval, cv, type RatioInterval } from "./stats.js";
import { type TrialMetric, trialMetric } from "./trial-metric.js";

export type ArmKey = "a" | "b";

export interface AbArm {
  readonly name: string;
  readonly target: Target;
  readonly fingerprint?: Fingerprint;
}

export interface Trial {
  readonly block: number;
  readonly arm: ArmKey;
  readonly value: number;
  readonly metrics: RunMetrics;
}

export interface AbOptions extends Omit<RunOptions, "target" | "onRequest"> {
  readonly a: AbArm;
  readonly b: AbArm;
  /** ABBA blocks; each gives one paired ratio. */
  readonly blocks: number;
  readonly metric: TrialMetric;
  /**
   * Restarts the one server as the given arm before its trials (same-pod-ab); resolves when the
   * server is ready. Without it both arms are live at once and the design is same-node-ab.
   */
  readonly switchTo?: (arm: ArmKey) => Promise<void>;
  /**
   * Unmeasured requests after each switch (default 1): a restarted server's first request pays for
   * cold code and untouched memory, and ABBA does not give both arms the same number of restarts.
   */
  readonly warmupsAfterSwitch?: number;
  /** Where to append records as they are measured: each trial, then the A/B. Absent writes nothing. */
  readonly records?: { readonly dir: string; readonly port: string; readonly command?: string };
  readonly runId?: string;
  readonly onTrial?: (trial: Trial) => void;
}

export interface AbResult {
  readonly method: "same-pod-ab" | "same-node-ab";
  readonly metric: TrialMetric;
  readonly better: "higher" | "lower";
  readonly trials: readonly Trial[];
  /** One per block: b over a when higher is better, a over b when lower is (above 1: b is better). */
  readonly ratios: readonly number[];
  /** The ratio with its 95% interval, from the trials paired within their blocks (blockedRatioInterval). */
  readonly interval: RatioInterval;
  readonly cv: number;
  /** The A/B record, when records were written. */
  readonly record?: BenchRecord;
  readonly trialRecords: readonly BenchRecord[];
}

/** The arm order of ABBA blocks: A B B A, repeated, so a linear drift weighs on both arms alike. */
export function abbaOrder(blocks: number): ArmKey[] {
  return Array.from({ length: blocks }, () => ["a", "b", "b", "a"] as ArmKey[]).flat();
}

/** Runs an interleaved A/B in ABBA blocks and takes the ratio within each block, with a 95% interval (blockedRatioInterval). */
export async function runAb(options: AbOptions): Promise<AbResult> {
  if (!Number.isInteger(options.blocks) || options.blocks < 2) {
    throw new BringupError(
      "BENCH_BLOCKS_INVALID",
      `an A/B needs at least 2 ABBA blocks for an interval, got ${options.blocks}; raise --blocks.`,
    );
  }
  if (options.a.name === options.b.name) {
    throw new BringupError(
      "BENCH_ARMS_SAME_NAME",
      `both arms are named "${options.a.name}"; name them apart.`,
    );
  }
  const spec = trialMetric(options.metric);
  const method = options.switchTo ? "same-pod-ab" : "same-node-ab";
  const id = options.runId ?? makeRunId("ab");
  const fingerprints = {
    a: armFingerprint(options.a.fingerprint, options.workload.hash),
    b: armFingerprint(options.b.fingerprint, options.workload.hash),
  };
  const context = abContext(options);
  const trials: Trial[] = [];
  const trialRecords: BenchRecord[] = [];
  let current: ArmKey | undefined;
  for (const [position, key] of abbaOrder(options.blocks).entries()) {
    if (options.signal?.aborted) break;
    const block = Math.floor(position / 4);
    const switched = options.switchTo !== undefined && key !== current;
    if (switched) {
      await options.switchTo?.(key);
      await dropConnections();
    }
    current = key;
    const arm = options[key];
    const numWarmups = (options.numWarmups ?? 0) + (switched ? (options.warmupsAfterSwitch ?? 1) : 0);
    const run = await runBench({ ...options, target: arm.target, checkTokenizer: false, numWarmups });
    const value = spec.of(run.metrics);
    if (run.metrics.completed === 0 || !Number.isFinite(value) || value <= 0) {
      throw new BringupError(
        "BENCH_TRIAL_FAILED",
        `trial ${position + 1} (arm ${arm.name}) measured no usable ${options.metric}: ${run.metrics.failed} requests failed (${Object.entries(
          run.metrics.failures,
        )
          .map(([reason, n]) => `${reason} ${n}`)
          .join(", ")}); check the endpoint.`,
        { subject: arm.target.url },
      );
    }
    const trial: Trial = { block, arm: key, value, metrics: run.metrics };
    trials.push(trial);
    options.onTrial?.(trial);
    if (options.records) {
      // Each trial is kept as soon as it is measured, so a killed run keeps what it measured.
      trialRecords.push(
        await appendRecord(
          options.records.dir,
          measuredRecord({
            port: options.records.port,
            id: `${id}-t${String(position + 1).padStart(3, "0")}-${key}`,
            metric: spec.name,
            label: `${spec.label}, one trial of an A/B`,
            unit: spec.unit,
            method: "single-run",
            context: `trial ${position + 1} (block ${block + 1}, arm ${arm.name}) of ${id}; ${context}`,
            ...(options.records.command ? { command: options.records.command } : {}),
            arms: [{ name: arm.name, samples: [value], fingerprint: fingerprints[key] }],
          }),
          "bench-trials.jsonl",
        ),
      );
    }
  }
  const ratios = blockRatios(trials, spec.better);
  if (ratios.length < 2) {
    throw new BringupError(
      "BENCH_INTERRUPTED",
      `the A/B stopped after ${trials.length} trials, too few for an interval.`,
    );
  }
  const interval = blockedRatioInterval(completeBlocks(trials, spec.better));
  const spread = cv(ratios);
  let record: BenchRecord | undefined;
  if (options.records) {
    record = await appendRecord(
      options.records.dir,
      measuredRecord({
        port: options.records.port,
        id,
        metric: spec.name,
        label: `${spec.label}, ${options.b.name} against ${options.a.name}`,
        unit: spec.unit,
        method,
        context: `${ratios.length} ABBA blocks; ${context}`,
        ...(options.records.command ? { command: options.records.command } : {}),
        arms: (["a", "b"] as const).map((key) => ({
          name: options[key].name,
          samples: trials.filter((t) => t.arm === key).map((t) => t.value),
          fingerprint: fingerprints[key],
        })),
        comparison: {
          figure: { shape: "point", value: roundRatio(interval.estimate) },
          ci95: [roundRatio(interval.low), roundRatio(interval.high)],
          cv: roundRatio(spread),
          better: spec.better,
        },
      }),
    );
  }
  return {
    method,
    metric: spec.name,
    better: spec.better,
    trials,
    ratios,
    interval,
    cv: spread,
    ...(record ? { record } : {}),
    trialRecords,
  };
}

/** The trials of each complete block, arms swapped when lower is better so that the ratio is "above 1: b is better". */
export function completeBlocks(trials: readonly Trial[], better: "higher" | "lower"): BlockTrials[] {
  const blocks: BlockTrials[] = [];
  for (const block of new Set(trials.map((t) => t.block))) {
    const inBlock = trials.filter((t) => t.block === block);
    const a = inBlock.filter((t) => t.arm === "a").map((t) => t.value);
    const b = inBlock.filter((t) => t.arm === "b").map((t) => t.value);
    if (a.length !== 2 || b.length !== 2) continue;
    blocks.push(better === "higher" ? { a, b } : { a: b, b: a });
  }
  return blocks;
}

/** Each complete block's ratio: mean of its b trials over mean of its a trials (inverted when lower is better). */
export function blockRatios(trials: readonly Trial[], better: "higher" | "lower"): number[] {
  const average = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  return completeBlocks(trials, better).map((block) => average(block.b) / average(block.a));
}

function abContext(options: AbOptions): string {
  const load =
    options.requestRate !== undefined && Number.isFinite(options.requestRate)
      ? `${options.requestRate} req/s (burstiness ${options.burstiness ?? 1})`
      : `concurrency ${options.maxConcurrency ?? options.workload.requests.length}`;
  return `${options.workload.name}, ${options.workload.requests.length} prompts per trial, ${load}`;
}
