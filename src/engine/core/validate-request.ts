import type { ErrorCode } from "../../common/error-catalogue.js";
import { BringupError } from "../../common/errors.js";
import type { GenerateRequest } from "../request.js";
import { validateSampling } from "../sampler.js";
import type { CacheManager } from "./cache-manager.js";
import type { EngineLimits } from "./options.js";

/**
 * Throws BringupError for a request that can never run: an empty prompt, a token outside the
 * vocabulary, bad max/min tokens, longer than max_model_len or than the whole cache, bad logprobs
 * or sampling parameters.
 */
export function validateRequest(
  r: GenerateRequest,
  limits: EngineLimits,
  cache: CacheManager,
  vocab: number,
): void {
  const bad = (code: ErrorCode, message: string, subject?: string): never => {
    throw new BringupError(code, message, subject === undefined ? undefined : { subject });
  };
  const n = r.promptTokenIds.length;
  if (n === 0) bad("PROMPT_EMPTY", "the prompt has no tokens; send at least one.", "prompt");
  for (const id of r.promptTokenIds) {
    if (!Number.isInteger(id) || id < 0 || id >= vocab) {
      bad(
        "TOKEN_OUT_OF_RANGE",
        `prompt token id ${id} is outside the vocabulary (0..${vocab - 1}).`,
        "prompt",
      );
    }
  }
  if (!Number.isInteger(r.maxTokens) || r.maxTokens < 0)
    bad("INVALID_MAX_TOKENS", `max_tokens must be an integer >= 0, got ${r.maxTokens}.`, "max_tokens");
  const { maxModelLen, blockSize } = limits;
  const minTokens = r.minTokens ?? 0;
  if (!Number.isInteger(minTokens) || minTokens < 0 || minTokens > r.maxTokens)
    bad(
      "INVALID_MAX_TOKENS",
      `min_tokens must be an integer from 0 to max_tokens (${r.maxTokens}), got ${minTokens}.`,
      "min_tokens",
    );
  if (n + r.maxTokens > maxModelLen) {
    bad(
      "CONTEXT_TOO_LONG",
      `this model's maximum context length is ${maxModelLen} tokens, but ${n + r.maxTokens} were requested (${n} in the prompt, ${r.maxTokens} to generate); shorten the prompt or lower max_tokens.`,
      "max_tokens",
    );
  }
  const short = cache.shortfall(n + r.maxTokens);
  if (short !== undefined) {
    bad(
      "KV_CAPACITY_EXCEEDED",
      `this request needs ${short.need} KV blocks of ${blockSize} tokens for its ${short.pool.kind} layers but the cache has ${short.have} for them; raise the KV memory budget or shorten the request.`,
      "max_tokens",
    );
  }
  for (const [field, v] of [
    ["logprobs", r.logprobs],
    ["prompt_logprobs", r.promptLogprobs],
  ] as const) {
    if (v !== undefined && !(Number.isInteger(v) && v >= 0 && v <= vocab)) {
      bad(
        "INVALID_LOGPROBS",
        `${field} must be an integer between 0 and the vocabulary size, got ${v}.`,
        field,
      );
    }
  }
  validateSampling(r.sampling ?? {});
  const outside = (ids: readonly number[] | undefined) =>
    ids?.find((id) => !Number.isInteger(id) || id < 0 || id >= vocab);
  if (outside(r.sampling?.allowedTokenIds) !== undefined)
    bad(
      "INVALID_SAMPLING_PARAMS",
      `allowed_token_ids has ${outside(r.sampling?.allowedTokenIds)}, outside the vocabulary (0..${vocab - 1}).`,
      "allowed_token_ids",
    );
}
