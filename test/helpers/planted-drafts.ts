import type { LoadedModel } from "../../src/engine/index.js";
import { type DraftModel, isDraftModel } from "../../src/engine/model/draft-model.js";

/**
 * `model` with its draft head's choices planted. A tiny model's MTP layer is untrained, so its
 * drafts are almost never the target's and verification rejects them all. To exercise kept drafts
 * and roll-back, and to bound what drafting can buy, this head runs the real layer (its state is
 * written and its time spent as ever) and then lifts one logit per row: the token that followed
 * (position, next token) in `continuations` (the target's own greedy outputs), except at every
 * `wrongEvery`-th position (0: never), where it drafts a wrong token.
 */
export function plantedDrafts(
  model: LoadedModel,
  continuations: readonly (readonly number[])[],
  wrongEvery = 0,
): LoadedModel {
  const real = model.model.drafter;
  if (!isDraftModel(real)) throw new Error(`${model.name} has no draft head: ${real.reason}`);
  const V = model.model.vocabSize;
  const next = new Map<string, number>();
  for (const all of continuations)
    for (let p = 0; p + 2 < all.length; p++) {
      const right = all[p + 2] as number;
      next.set(`${p}:${all[p + 1]}`, wrongEvery > 0 && p % wrongEvery === 0 ? (right + 1) % V : right);
    }
  const head: DraftModel = {
    states: (switches) => real.states(switches),
    forward: (ctx, storage, previous) => {
      const out = real.forward(ctx, storage, previous);
      const { tokens, positions, logitRows } = ctx.batch;
      logitRows.forEach((t, r) => {
        const token = next.get(`${positions[t]}:${tokens[t]}`);
        if (token !== undefined) out.logits[r * V + token] = 1e4;
      });
      return out;
    },
  };
  return { ...model, model: model.model.withDrafter(head) };
}
