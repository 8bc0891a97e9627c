import { Engine, type EngineOptions, type LoadedModel, type PromptLogprobs } from "../../src/engine/index.js";

/**
 * The prompt's logprobs (each position's own token, from the second on) and six greedy tokens
 * after it, on a fresh engine of `options` (two threads and max_model_len 512 unless set), closed after.
 */
export async function promptAndGreedy(
  model: LoadedModel,
  prompt: readonly number[],
  options: EngineOptions,
): Promise<{ logprobs: number[]; tokens: number[] }> {
  const engine = new Engine(model, { threads: 2, maxModelLen: 512, ...options });
  try {
    let logprobs: PromptLogprobs = [];
    const tokens: number[] = [];
    for await (const out of engine.submit({
      promptTokenIds: [...prompt],
      maxTokens: 6,
      promptLogprobs: 0,
      sampling: { temperature: 0 },
      ignoreEos: true,
    })) {
      if (out.promptLogprobs) logprobs = out.promptLogprobs;
      if (out.token) tokens.push(out.token.tokenId);
    }
    return { logprobs: logprobs.slice(1).map((p) => p?.logprob as number), tokens };
  } finally {
    await engine.close();
  }
}
