import type { ErrorCode } from "../common/error-catalogue.js";
import type {
  EngineLimits,
  EngineOptions,
  EngineStats,
  GenerateRequest,
  StepOutput,
} from "../engine/index.js";
import type { PackedPromptLogprobs } from "./packed-logprobs.js";

/** Where the engine thread gets its model: a generated tiny size or a model directory. */
export type ModelSource = { readonly tinySize: string } | { readonly modelDir: string };

export interface EngineThreadData {
  readonly source: ModelSource;
  readonly options: EngineOptions;
}

/** A BringupError as it crosses threads. */
export interface ThreadError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly subject?: string;
}

export type ToEngine =
  | {
      readonly type: "submit";
      /** One per sequence (seed); the first also names the request in accepted/rejected/scheduled. */
      readonly ids: readonly number[];
      readonly request: GenerateRequest;
      readonly seeds: readonly (number | bigint | undefined)[];
    }
  | { readonly type: "abort"; readonly id: number }
  | { readonly type: "close" };

export type FromEngine =
  | {
      readonly type: "ready";
      readonly name: string;
      readonly root: string;
      readonly limits: EngineLimits;
      readonly vocabSize: number;
      readonly tokenizerJson: unknown;
      readonly tokenizerConfig: unknown;
      readonly eosTokenIds: readonly number[];
      readonly stats: EngineStats;
    }
  | { readonly type: "load-failed"; readonly error: ThreadError }
  | { readonly type: "accepted"; readonly id: number }
  | { readonly type: "rejected"; readonly id: number; readonly error: ThreadError }
  | {
      readonly type: "output";
      readonly id: number;
      readonly output: StepOutput;
      /** The output's prompt logprobs, packed (then the output has none of its own). */
      readonly packed?: PackedPromptLogprobs;
    }
  | { readonly type: "end"; readonly id: number }
  | { readonly type: "scheduled"; readonly id: number; readonly queueSeconds: number }
  | { readonly type: "failed"; readonly id: number; readonly error: ThreadError }
  | {
      readonly type: "stats";
      readonly stats: EngineStats;
      /** The tokens of each step (Engine.onStep) since the last stats message, in order. */
      readonly steps: readonly number[];
    }
  | { readonly type: "closed" };
