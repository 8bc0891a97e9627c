import type { ErrorCode } from "../common/error-catalogue.js";
import type { GateKind, GateStatus } from "../gates/index.js";
import type { Method, Unit } from "../records/index.js";
import type { SweepSummary } from "./sweep-stage.js";

/** The stages of a bring-up, in the order they run. */
export const STAGES = [
  "manifest",
  "weights",
  "convert",
  "serve",
  "gates",
  "sweep",
  "benchmarks",
  "site",
  "stop",
] as const;
export type StageName = (typeof STAGES)[number];

export type StageStatus = "started" | "done" | "skipped" | "failed";

/** A stage starting or ending, for a progress display. `detail` is one line of what it did or why not. */
export interface StageEvent {
  readonly stage: StageName;
  readonly status: StageStatus;
  readonly detail?: string;
  /** Milliseconds since the stage started (on every event but `started`). */
  readonly elapsedMs?: number;
}

/** Progress inside a stage: `done` of `total` items (gates, A/B trials), the current one named. */
export interface ProgressEvent {
  readonly stage: StageName;
  readonly done: number;
  readonly total: number;
  readonly item: string;
}

/** One gate of the reference section, as it came out. */
export interface GateSummary {
  readonly kind: GateKind;
  readonly status: GateStatus;
  /** One line: what was measured against what, or why it did not run. */
  readonly summary: string;
  readonly code?: ErrorCode;
  /** The gate's headline value and unit, when it ran. */
  readonly value?: number;
  readonly unit?: Unit;
  /** What the value counts or measures ("positions differing between decodes, ..."), when it ran. */
  readonly label?: string;
  /** The record written for it, when it ran. */
  readonly record?: string;
  readonly method?: Method;
}

/** One figure written by the run: an A/B ratio with its interval, or a gate's measurement. */
export interface FigureSummary {
  readonly record: string;
  readonly label: string;
  readonly method: Method;
  readonly unit: Unit;
  /** A/B: the ratio (b over a, or a over b when lower is better) and its 95% bootstrap interval. */
  readonly ratio?: number;
  readonly interval?: readonly [number, number];
  /** The figure as the site prints it, method included. */
  readonly text: string;
}

/** One A/B benchmark of the reference section that produced no figure, and why. */
export interface SkippedBenchmark {
  readonly record: string;
  readonly reason: string;
  readonly code?: ErrorCode;
}

export interface StageTiming {
  readonly stage: StageName;
  readonly status: Exclude<StageStatus, "started">;
  readonly detail: string;
  readonly seconds: number;
}

/** What `bringUp` returns: every gate, every figure, where the page is, and how long each stage took. */
export interface BringUpSummary {
  readonly port: string;
  /** "embedded" on the reference engine, else the endpoint's URL. */
  readonly target: string;
  /** True when the run was stopped by its AbortSignal; what it recorded before is kept. */
  readonly aborted: boolean;
  readonly gates: readonly GateSummary[];
  readonly figures: readonly FigureSummary[];
  readonly skippedBenchmarks: readonly SkippedBenchmark[];
  /** The throughput-latency sweep, when it measured a point. */
  readonly sweep?: SweepSummary;
  /** The embedded servers' URLs by role (none with an outside endpoint); all are stopped when bringUp returns. */
  readonly servers: { readonly build?: string; readonly baseline?: string; readonly retrieval?: string };
  /** Every record appended, by id, in order. */
  readonly records: readonly string[];
  /** The store they were appended to (by default the port's local, unpublished one). */
  readonly recordsDir?: string;
  /** The port's built page (an HTML file), when the site was built. */
  readonly page?: string;
  readonly siteDir?: string;
  readonly stages: readonly StageTiming[];
}

/** True when every gate ran and passed (a gate not run is not a pass). */
export function gatesPassed(summary: BringUpSummary): boolean {
  return summary.gates.length > 0 && summary.gates.every((gate) => gate.status === "passed");
}
