import type { SamplingParams, TokenLogprob } from "./sampler.js";

/** Why a request ended. "stop": an end-of-sequence or stop token; "length": max_tokens or max_model_len; "abort": cancelled. */
export type FinishReason = "stop" | "length" | "abort";

/** One generation request, already tokenized. */
export interface GenerateRequest {
  readonly promptTokenIds: readonly number[];
  /** Tokens to generate; 0 runs the prompt only (scoring, with promptLogprobs). */
  readonly maxTokens: number;
  readonly sampling?: SamplingParams;
  /** Number of top alternatives to return with each generated token; undefined returns no logprobs, 0 only the chosen token's. */
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

/** A generated token with its log-probability under the model's raw distribution. */
export interface GeneratedToken {
  readonly tokenId: number;
  readonly logprob: number;
  /** 1 = the most likely token. */
  readonly rank: number;
  /** The top-N alternatives when `logprobs` was asked for, most likely first. */
  readonly top?: readonly TokenLogprob[];
}

/** Prompt logprobs in vLLM's shape: the first position has none (null). */
export type PromptLogprobs = readonly (GeneratedToken | null)[];

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
