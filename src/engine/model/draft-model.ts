import type { LayerStates } from "../cache/state-spec.js";
import type { LayerStorage } from "../cache/storage.js";
import type { ForwardContext, StepResult } from "./model.js";

/**
 * A checkpoint's draft head for speculative decoding (DeepSeek's multi-token prediction layer): at
 * position p it reads the residual stream the main model (or its own previous draft step) left at
 * p and the token at p + 1, and predicts the token at p + 2. It keeps its own per-layer state.
 */
export interface DraftModel {
  /** What its layer keeps per sequence when run with `switches` (planned after the main layers'). */
  states(switches: ReadonlyMap<string, string>): LayerStates;
  /**
   * Runs the head over `ctx.batch`, whose tokens are each row's next token (t at p + 1) at
   * positions p, given `previous` [T, streams x hidden]: the residual stream at each row. Returns
   * logits at `batch.logitRows` and its own output stream (the input of a further draft step).
   */
  forward(ctx: ForwardContext, storage: LayerStorage, previous: Float32Array): StepResult;
}

/** Whether `d` is a draft head (not the reason a model has none). */
export function isDraftModel(d: DraftModel | { readonly reason: string }): d is DraftModel {
  return "forward" in d;
}
