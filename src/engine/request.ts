import { BringupError } from "../common/errors.js";
import type { SamplingParams, TokenLogprob } from "./sampler.js";

/** Why a request ended. "stop": an end-of-sequence or stop token; "length": max_tokens or max_model_len; "abort": cancelled. */
export type FinishReason = "stop" | "length" | "abort";

/** One generation request, already tokenized. */
export interface GenerateRequest {
  readonly promptTokenIds: readonly number[];
  /** Tokens to generate; 0 runs the prompt only (scoring, with promptLogprobs). */
  readonly maxTokens: number;
  readonly sampling?: SamplingParams;
  /**
   * Number of top alternatives to return with each generated token; 0 only the chosen token's
   * logprob and rank. Undefined returns none, and the engine computes none (each is a log-softmax
   * over the whole vocabulary): ask for 0 wherever a generated token's logprob is read.
   */
  readonly logprobs?: number;
  /** Number of top alternatives for each prompt position; undefined returns no prompt logprobs. */
  readonly promptLogprobs?: number;
  /** Extra token ids that end generation (finish reason "stop"). */
  readonly stopTokenIds?: readonly number[];
  /** Keep generating past end-of-sequence tokens. */
  readonly ignoreEos?: boolean;
  /** End-of-sequence and stop tokens are not chosen before this many tokens (default 0). */
  readonly minTokens?: number;
}

/** A token with its log-probability under the model's raw distribution. */
export interface ScoredToken {
  readonly tokenId: number;
  readonly logprob: number;
  /** 1 = the most likely token. */
  readonly rank: number;
  /** The top-N alternatives when they were asked for, most likely first. */
  readonly top?: readonly TokenLogprob[];
}

/** A generated token: scored when the request asked for `logprobs`, else the token alone. */
export type GeneratedToken = ScoredToken | UnscoredToken;

/** A generated token of a request that asked for no logprobs: none was computed. */
export interface UnscoredToken {
  readonly tokenId: number;
  readonly logprob?: undefined;
  readonly rank?: undefined;
  readonly top?: undefined;
}

/**
 * `token` with its logprob, which the engine computes only for a request that asked for logprobs:
 * a reader of logprobs whose request did not ask is a bug, not a token to show without one.
 */
export function scoredToken(token: GeneratedToken): ScoredToken {
  if (token.logprob === undefined)
    throw new BringupError(
      "LOGPROB_NOT_COMPUTED",
      `token ${token.tokenId} has no logprob: its request must ask for logprobs (0 for the token's own).`,
    );
  return token;
}

/** Prompt logprobs in vLLM's shape: the first position has none (null). */
export type PromptLogprobs = readonly (ScoredToken | null)[];

/** One item of a request's output stream. The last one has a finishReason. */
export interface StepOutput {
  /** The token this step produced; absent on a final item that adds none (max_tokens 0, abort). */
  readonly token?: GeneratedToken;
  readonly finishReason: FinishReason | null;
  /** On the first item only, when promptLogprobs was asked for. */
  readonly promptLogprobs?: PromptLogprobs;
  readonly numPromptTokens: number;
  /** Tokens generated so far, this one included. */
  readonly numGeneratedTokens: number;
}
