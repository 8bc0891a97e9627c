// The throughput-latency sweep of a bring-up: the build and the baseline, both embedded servers,
// measured together at a few concurrencies, its records written as the sweep bench writes them.
import {
  armFingerprint,
  randomWorkload,
  runSweep,
  type SweepArm,
  type SweepPoint,
  sweepId,
  sweepRecords,
  type TokenRange,
} from "../bench/index.js";
import { type Build, describeBuild, type Reference, switchFlags } from "../catalog/index.js";
import { probeEndpoint } from "../client/index.js";
import { appendRecord } from "../records/index.js";
import type { EmbeddedServer } from "./embedded-server.js";
import { embeddedFingerprint } from "./gate-stage.js";

/** How big a bring-up's sweep is: the concurrencies, and each request's length. */
export interface SweepSize {
  /** Streams in flight at each point, in order (each point sends `requestsPerStream` per stream). */
  readonly concurrencies: readonly number[];
  readonly requestsPerStream: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
}

/**
 * `bringup up`'s sweep when no size is given: two points, short requests, so the quick start stays
 * about as long as without it; `--sweep-concurrency 1,2,4,...,64` draws the whole curve.
 */
export const DEFAULT_SWEEP: SweepSize = {
  concurrencies: [1, 2],
  requestsPerStream: 2,
  promptTokens: 128,
  outputTokens: 32,
};

/** The sweep a bring-up runs: the sizes asked over the default, or undefined when it is left out. */
export function sweepSize(asked: false | Partial<SweepSize> | undefined): SweepSize | undefined {
  if (asked === false) return undefined;
  return { ...DEFAULT_SWEEP, ...asked };
}

/** The seed of every sweep workload: the same prompts on every run, so sweeps compare. */
const SWEEP_WORKLOAD_SEED = 1;

/** One arm at one concurrency, as the summary shows it. */
export interface SweepPointSummary {
  readonly arm: string;
  readonly concurrency: number;
  readonly outputTokPerS: number;
  readonly ttftMedianMs: number;
  readonly tpotMedianMs: number;
  readonly failed: number;
}

/** The sweep a bring-up measured: its id (the prefix of its records' ids) and each point. */
export interface SweepSummary {
  readonly id: string;
  readonly points: readonly SweepPointSummary[];
}

/** One embedded server of the sweep and the build it serves. */
export interface SweepServer {
  readonly server: EmbeddedServer;
  readonly build: Build;
}

export interface SweepStageOptions {
  readonly port: string;
  readonly resultsDir: string;
  readonly command: string;
  readonly size: SweepSize;
  /** Token ids the seeded prompts are drawn from; inside the model's vocabulary. */
  readonly tokens: TokenRange;
  readonly signal?: AbortSignal;
  readonly onPoint?: (point: SweepPoint, done: number, total: number) => void;
}

/** Why a bring-up cannot sweep, or undefined when it can. */
export function sweepBlocked(reference: Reference, size: SweepSize): string | undefined {
  if (reference.baseline === undefined)
    return "the reference section names no baseline build to sweep against the port's";
  const length = size.promptTokens + size.outputTokens;
  if (length > reference.max_model_len)
    return `a sweep request is ${length} tokens, beyond the reference max_model_len ${reference.max_model_len}`;
  return undefined;
}

/**
 * Sweeps the baseline and the build at each concurrency (both arms in one run, the order
 * alternating), and appends each point's single-run records to the port's local store once the
 * sweep ends, named as `sweepRecords` names them so the port page charts them.
 */
export async function runReferenceSweep(
  arms: readonly [SweepServer, SweepServer],
  options: SweepStageOptions,
): Promise<{ summary: SweepSummary; records: string[] }> {
  const { size } = options;
  const workload = (requests: number) =>
    randomWorkload({
      numPrompts: requests,
      inputLen: size.promptTokens,
      outputLen: size.outputTokens,
      seed: SWEEP_WORKLOAD_SEED,
      tokens: options.tokens,
    });
  const hash = workload(1).hash;
  const [a, b] = await Promise.all(arms.map((arm) => sweepArm(arm, hash)));
  const started = new Date();
  // A point that ended after a stop had its requests cut (the servers close at once): not recorded.
  const points: SweepPoint[] = [];
  await runSweep({
    arms: [a as SweepArm, b as SweepArm],
    concurrencies: size.concurrencies,
    requestsPerStream: size.requestsPerStream,
    workload,
    ...(options.signal ? { signal: options.signal } : {}),
    onPoint: (point, done, total) => {
      if (options.signal?.aborted) return;
      points.push(point);
      options.onPoint?.(point, done, total);
    },
  });
  const id = sweepId(options.port, started);
  const records = sweepRecords(points, {
    port: options.port,
    id,
    arms: [a as SweepArm, b as SweepArm],
    workloadName: `random-${size.promptTokens}-${size.outputTokens}`,
    command: options.command,
  });
  for (const record of records) await appendRecord(options.resultsDir, record);
  return {
    summary: {
      id,
      points: points.map((point) => ({
        arm: point.arm,
        concurrency: point.concurrency,
        outputTokPerS: point.result.metrics.outputThroughput,
        ttftMedianMs: point.result.metrics.ttft.median,
        tpotMedianMs: point.result.metrics.tpot.median,
        failed: point.result.metrics.failed,
      })),
    },
    records: records.map((r) => r.id),
  };
}

/** An arm as the server says of itself, its fingerprint naming the build it was started as. */
async function sweepArm({ server, build }: SweepServer, workloadHash: string): Promise<SweepArm> {
  const { probe } = await probeEndpoint(server.url);
  return {
    name: describeBuild(build),
    target: { url: probe.url, model: probe.model, endpointType: "completions", ignoreEos: true },
    fingerprint: armFingerprint(
      embeddedFingerprint(probe.fingerprint, build.kv_layout, server.weightsChecksum, switchFlags(build)),
      workloadHash,
    ),
  };
}

/** One line of what the sweep measured: output tok/s of each arm at the highest concurrency. */
export function describeSweep(summary: SweepSummary): string {
  const top = Math.max(...summary.points.map((p) => p.concurrency));
  const last = summary.points
    .filter((p) => p.concurrency === top)
    .map((p) => `${p.arm} ${p.outputTokPerS.toFixed(1)}`)
    .join(", ");
  const concurrencies = [...new Set(summary.points.map((p) => p.concurrency))].join(",");
  return `${summary.points.length} points at concurrency ${concurrencies}; output tok/s at ${top}: ${last}; records ${summary.id}-*`;
}
