import { Engine } from "../engine.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { scoredToken } from "../request.js";

/** A model's prompt logprobs and greedy continuation, as numbers that JSON keeps exactly. */
export interface GoldenLogprobs {
  readonly prompt: readonly number[];
  /** [tokenId, logprob, then (id, logprob) of the top 2] for each prompt position after the first. */
  readonly promptLogprobs: readonly (readonly number[])[];
  /** [tokenId, logprob] of each greedy token. */
  readonly generated: readonly (readonly number[])[];
}

/** The text every golden model scores: long enough to cross several KV blocks and windows. */
export const GOLDEN_TEXT =
  "Salt tightens the gluten, so a dough salted early feels firmer. Rest it for an hour and the strands relax again.";

/**
 * Prompt logprobs and four greedy tokens of `model` on the plain kernels on one thread (the bits
 * the scalar reference defines), so a saved copy pins the model's arithmetic across engine changes.
 */
export async function goldenLogprobs(model: LoadedModel): Promise<GoldenLogprobs> {
  const engine = new Engine(model, { threads: 1, simd: false, maxNumSeqs: 1 });
  try {
    const prompt = model.tokenizer.encode(GOLDEN_TEXT).slice(0, 48);
    let promptLogprobs: number[][] = [];
    const generated: number[][] = [];
    for await (const out of engine.submit({
      promptTokenIds: prompt,
      maxTokens: 4,
      logprobs: 0,
      promptLogprobs: 2,
      sampling: { temperature: 0 },
      ignoreEos: true,
    })) {
      if (out.promptLogprobs) {
        promptLogprobs = out.promptLogprobs.slice(1).map((p) => {
          const lp = p as NonNullable<typeof p>;
          return [lp.tokenId, lp.logprob, ...(lp.top ?? []).flatMap((t) => [t.tokenId, t.logprob])];
        });
      }
      if (out.token) generated.push([out.token.tokenId, scoredToken(out.token).logprob]);
    }
    return { prompt, promptLogprobs, generated };
  } finally {
    await engine.close();
  }
}
