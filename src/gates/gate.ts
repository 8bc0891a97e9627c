import type { Gate as GateSpec } from "../catalog/index.js";
import type { ProbedEndpoint } from "../client/index.js";
import type { ErrorCode } from "../common/error-catalogue.js";
import type { BringupError } from "../common/errors.js";
import type { Unit } from "../records/index.js";

export type GateKind = GateSpec["kind"];
export type GateStatus = "passed" | "failed" | "not-run";

/** What a gate run needs besides its manifest spec; each gate says which parts it cannot do without. */
export interface GateContext {
  readonly endpoint?: ProbedEndpoint;
  /** Why the endpoint could not be probed; gates that need it report this as their reason. */
  readonly endpointError?: BringupError;
  /** A reference endpoint measured in the same session (A/B). */
  readonly reference?: ProbedEndpoint;
  readonly referenceError?: BringupError;
  /** A recorded reference perplexity. */
  readonly referenceValue?: number;
  /** Full-attention KV token capacity to compare against, when no reference endpoint is given. */
  readonly fullAttentionCapacity?: number;
  /**
   * KV capacity: the ratio the two builds give by construction at the endpoint's context, when the
   * caller knows the model (the embedded engine's kvCapacityRatio of two layouts, or the port's
   * values per token under two switch settings); the measured ratio must then also be within
   * tolerance of it, not only of the manifest's expected_ratio.
   */
  readonly theoreticalRatio?: number;
  /** The text perplexity and needle haystacks are cut from. */
  readonly corpus?: string;
  /** Perplexity: tokens per window and how many windows (defaults 512 and 4). */
  readonly windowTokens?: number;
  readonly windows?: number;
  /** Needles: context lengths to run instead of the manifest's (real lengths need real hardware). */
  readonly needleContexts?: readonly number[];
  /** Needles: tokens the answer may take (default 32); the prompt fills the rest of each length. */
  readonly needleAnswerTokens?: number;
  /** Bit-identical decode: the golden file to compare against. */
  readonly goldenFile?: string;
  /** Weights: the source checkpoint and its conversion. */
  readonly sourceCheckpoint?: string;
  readonly convertedCheckpoint?: string;
}

/** One arm's samples, for the record. */
export interface GateArm {
  readonly name: string;
  readonly samples: readonly number[];
  readonly reference: boolean;
}

/** The result of one gate: passed / failed with what was measured, or not-run with why. */
export interface GateOutcome {
  readonly kind: GateKind;
  readonly status: GateStatus;
  /** One line: what was measured against what, or why it could not run. */
  readonly summary: string;
  /** The BringupError code that kept the gate from running. */
  readonly code?: ErrorCode;
  readonly metric?: string;
  readonly label?: string;
  readonly unit?: Unit;
  /** The headline value (e.g. perplexity, needles retrieved). */
  readonly value?: number;
  readonly arms?: readonly GateArm[];
  /** Needles only: grid rows of [context, ...per depth retrieved]. */
  readonly grid?: { readonly depths: readonly number[]; readonly rows: readonly NeedleRow[] };
  readonly measured?: Record<string, unknown>;
}

export interface NeedleRow {
  readonly context: number;
  readonly retrieved: readonly boolean[];
}

/** Which of a gate's baselines the caller supplies, known before any request is sent. */
export interface GateInputs {
  readonly reference: boolean;
  readonly referenceValue: boolean;
  readonly fullAttentionCapacity: boolean;
  readonly goldenFile: boolean;
}

/** One gate kind behind one interface. `run` throws BringupError when it cannot run. */
export interface Gate<S extends GateSpec = GateSpec> {
  readonly kind: S["kind"];
  /** True when the gate measures a server (every kind but the checkpoint comparison). */
  readonly needsEndpoint: boolean;
  /**
   * The baseline the gate cannot run without and the caller did not supply, as the error naming
   * the option to pass; checked by a command before any work and by `run` itself.
   */
  missingInput?(spec: S, given: GateInputs): BringupError | undefined;
  run(spec: S, context: GateContext): Promise<GateOutcome>;
}
