import { planKvCache } from "../../src/engine/cache/capacity.js";
import type { LayerStates } from "../../src/engine/cache/state-spec.js";
import { type LayerStorage, layerStorage } from "../../src/engine/cache/storage.js";
import type { ForwardBatch } from "../../src/engine/model/model.js";

/**
 * Fresh storage for `states` (8 blocks of 16 positions a pool, window-sized) and a batch that
 * prefills `tokens` at positions 0.. as one sequence, every position's logits asked for: what a
 * block-level test steps a model or layer with, outside the engine's scheduler.
 */
export function promptBatch(
  states: readonly LayerStates[],
  tokens: number[],
): { readonly batch: ForwardBatch; readonly storage: LayerStorage[] } {
  const plan = planKvCache(states, "window-sized", 16);
  const storage = plan.layers.map((layer) =>
    layerStorage(
      layer,
      plan.pools.map(() => 8),
    ),
  );
  const positions = tokens.map((_, p) => p);
  const tables = plan.pools.map(() => [0, 1, 2, 3, 4, 5, 6, 7]);
  const batch = {
    tokens,
    positions,
    blockTables: positions.map(() => tables),
    sequences: [{ first: 0, count: tokens.length, slot: -1 }],
    logitRows: positions,
  };
  return { batch, storage };
}
