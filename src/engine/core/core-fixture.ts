import { planKvCache } from "../cache/capacity.js";
import type { LayerStates } from "../cache/state-spec.js";
import type { GenerateRequest } from "../request.js";
import { Sequence } from "./sequence.js";

/** Tests' shared setup: one layer of each kind of state, planned in blocks of BLOCK tokens. */
export const BLOCK = 4;

const kv = { numKvHeads: 2, headDim: 4, vHeadDim: 3 };

/** Full attention, a sliding window of 6 (a ring), KDA's per-sequence states, MLA with DSA's indexer. */
export const EVERY_KIND: readonly LayerStates[] = [
  { kv: { kind: "full", ...kv } },
  { kv: { kind: "sliding-window", window: 6, ...kv } },
  {
    state: { kind: "recurrent-state", numHeads: 2, keyDim: 3, valueDim: 3 },
    qConv: { kind: "conv-tail", channels: 6, kernel: 4 },
  },
  {
    latent: { kind: "latent", latentDim: 8, ropeDim: 2 },
    indexerKeys: { kind: "indexer-keys", headDim: 4 },
  },
];

export const everyKindPlan = () => planKvCache(EVERY_KIND, "window-sized", BLOCK);

let nextId = 0;

/** A sequence of `prompt` tokens, asking for `maxTokens`, holding units in `pools` pools. */
export function sequence(prompt: number, pools: number, request: Partial<GenerateRequest> = {}): Sequence {
  const promptTokenIds = Array.from({ length: prompt }, (_, i) => 1 + (i % 7));
  return new Sequence(nextId++, { promptTokenIds, maxTokens: 4, ...request }, undefined, pools, []);
}
