import type { BenchRecordInput, Fingerprint } from "../records/index.js";
import { slug } from "./record-builders.js";
import type { Target } from "./request.js";
import { type RunResult, runBench } from "./run.js";
import { runRecords } from "./run-records.js";
import type { Workload } from "./workload.js";

/** One arm of a sweep: a server under a name, with its fingerprint for the records. */
export interface SweepArm {
  readonly name: string;
  readonly target: Target;
  readonly fingerprint: Fingerprint;
}

/** One arm measured at one concurrency. */
export interface SweepPoint {
  readonly arm: string;
  readonly concurrency: number;
  readonly result: RunResult;
}

export interface SweepOptions {
  readonly arms: readonly [SweepArm, SweepArm];
  /** Streams in flight at each point, e.g. 1, 2, 4, 8 (each point sends `requestsPerStream` per stream). */
  readonly concurrencies: readonly number[];
  readonly requestsPerStream: number;
  /** The requests of one point: the same workload for both arms at that point. */
  readonly workload: (requests: number) => Workload;
  readonly signal?: AbortSignal;
  /** Sees each point as it is measured (for progress). */
  readonly onPoint?: (point: SweepPoint, done: number, total: number) => void;
}

/**
 * A throughput-latency sweep of two arms in one run, as GuideLLM and AIPerf draw it: at each
 * concurrency both arms serve the same requests, the arm that goes first alternating from one
 * concurrency to the next (A B, B A, ...), so a machine that slows down during the run weighs on
 * both arms alike. Each point keeps every request, for output tok/s against TTFT and TPOT.
 */
export async function runSweep(options: SweepOptions): Promise<SweepPoint[]> {
  const points: SweepPoint[] = [];
  const total = options.concurrencies.length * 2;
  for (const [index, concurrency] of options.concurrencies.entries()) {
    const workload = options.workload(concurrency * options.requestsPerStream);
    const [a, b] = options.arms;
    for (const arm of index % 2 === 0 ? [a, b] : [b, a]) {
      if (options.signal?.aborted) return points;
      const result = await runBench({
        target: arm.target,
        workload,
        maxConcurrency: concurrency,
        // One request first on each arm, left out of every figure: the first request pays for
        // allocations and cold caches.
        numWarmups: index === 0 ? 1 : 0,
        checkTokenizer: false,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const point = { arm: arm.name, concurrency, result };
      points.push(point);
      options.onPoint?.(point, points.length, total);
    }
  }
  return points;
}

/** A sweep record's id: `<port>/<sweep>-<arm>-c<concurrency>-<metric>`, as sweepRecords writes it. */
const SWEEP_RECORD =
  /^(.+\/sweep-[0-9]{8}-[0-9]{6})-(.+)-c([0-9]+)-(output-throughput|ttft-ms|tpot-ms|e2el-ms)$/;

/** The parts of a sweep record's id, or undefined for any other record. */
export function sweepRecordId(
  id: string,
): { sweep: string; arm: string; concurrency: number; metric: string } | undefined {
  const match = SWEEP_RECORD.exec(id);
  if (match === null) return undefined;
  const [, sweep, arm, concurrency, metric] = match as unknown as [string, string, string, string, string];
  return { sweep, arm, concurrency: Number(concurrency), metric };
}

/** The sweep's id: `<port>/sweep-<yyyymmdd>-<hhmmss>`, from its start time. */
export function sweepId(port: string, at: Date = new Date()): string {
  const stamp = at.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${port}/sweep-${stamp}`;
}

/**
 * The records of a sweep: for each arm at each concurrency, the single-run records of that load
 * point (aggregate output tok/s, and each request's TTFT, TPOT and end-to-end latency), named so
 * that sweepRecordId reads the arm and the concurrency back.
 */
export function sweepRecords(
  points: readonly SweepPoint[],
  options: {
    port: string;
    id: string;
    arms: readonly SweepArm[];
    workloadName: string;
    command?: string;
  },
): BenchRecordInput[] {
  return points.flatMap((point) => {
    const arm = options.arms.find((a) => a.name === point.arm) as SweepArm;
    return runRecords(point.result, {
      port: options.port,
      id: `${options.id.slice(options.port.length + 1)}-${slug(point.arm)}-c${point.concurrency}`,
      context: `${point.arm}, ${options.workloadName}, ${point.result.requests.length} requests at concurrency ${point.concurrency}, both arms in one sweep`,
      fingerprint: arm.fingerprint,
      ...(options.command ? { command: options.command } : {}),
    });
  });
}
