import { describe, expect, it } from "vitest";
import { createTinyModel } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";
import { CacheManager } from "./cache-manager.js";
import { resolveLimits } from "./options.js";
import { validateRequest } from "./validate-request.js";

const model = await createTinyModel(findTinySize("tiny") as TinySize);
// 8 blocks of 4 tokens: a request of more than 32 tokens never fits.
const bytesPerToken = model.model.layers.length * 2 * 2 * 16 * 4;
const { limits, plan, units } = resolveLimits(model.model, model.config, {
  maxModelLen: 64,
  blockSize: 4,
  kvCacheBytes: 8 * 4 * bytesPerToken,
});
const cache = new CacheManager(plan, units);
const validate = (r: Parameters<typeof validateRequest>[0]) =>
  validateRequest(r, limits, cache, model.config.vocabSize);

describe("validateRequest", () => {
  it("rejects requests that can never run, with the field to fix", () => {
    for (const [request, code, subject] of [
      [{ promptTokenIds: [], maxTokens: 1 }, "PROMPT_EMPTY", "prompt"],
      [{ promptTokenIds: [1e6], maxTokens: 1 }, "TOKEN_OUT_OF_RANGE", "prompt"],
      [{ promptTokenIds: [1], maxTokens: -1 }, "INVALID_MAX_TOKENS", "max_tokens"],
      [{ promptTokenIds: [1], maxTokens: 2, minTokens: 3 }, "INVALID_MAX_TOKENS", "min_tokens"],
      [{ promptTokenIds: [1, 2], maxTokens: 63 }, "CONTEXT_TOO_LONG", "max_tokens"],
      [{ promptTokenIds: [1, 2], maxTokens: 40 }, "KV_CAPACITY_EXCEEDED", "max_tokens"],
      [{ promptTokenIds: [1], maxTokens: 1, logprobs: -1 }, "INVALID_LOGPROBS", "logprobs"],
      [{ promptTokenIds: [1], maxTokens: 1, sampling: { topP: 0 } }, "INVALID_SAMPLING_PARAMS", "top_p"],
      [
        { promptTokenIds: [1], maxTokens: 1, sampling: { allowedTokenIds: [1e6] } },
        "INVALID_SAMPLING_PARAMS",
        "allowed_token_ids",
      ],
    ] as const) {
      expect(() => validate(request)).toThrow(expect.objectContaining({ code, subject }));
    }
  });

  it("accepts the longest request the cache holds", () => {
    expect(() => validate({ promptTokenIds: [1, 2], maxTokens: 30 })).not.toThrow();
  });
});
