import { BringupError } from "../../common/errors.js";
import type { LayerState } from "../model/model.js";
import { LayerKvCache } from "./kv-cache.js";
import { type CacheSpec, cacheSpecFor, type KvLayout } from "./spec.js";
import { StateSlotSpec } from "./state-slots.js";

/** Layers that share block tables: one spec for allocation, the bytes one block costs them all. */
export interface KvCacheGroup {
  /** Equal for layers that allocate and place positions alike (see cacheSpecFor). */
  readonly key: string;
  /** The allocation spec (blocksNeeded, ring) of every layer in the group. */
  readonly spec: CacheSpec;
  /** Layer indices in the group. */
  readonly layers: readonly number[];
  /** Bytes one block takes summed over the group's layers. */
  readonly bytesPerBlock: number;
}

/**
 * Each layer's own spec (its mask may differ within a group; undefined for a layer that keeps
 * nothing) and the groups, in first-layer order; a layer's group is -1 when it keeps nothing.
 */
export interface KvCachePlan {
  readonly layerSpecs: readonly (CacheSpec | undefined)[];
  readonly layerGroups: readonly number[];
  readonly groups: readonly KvCacheGroup[];
}

/**
 * How layers that declare `states` keep them under `kvLayout` with blocks of `blockSize` tokens:
 * paged layers in block groups (a sliding window as a ring where the layout says so), every
 * per-sequence state in one group of slots (a sequence takes one slot there for all its layers).
 */
export function planKvCache(
  states: readonly LayerState[],
  kvLayout: KvLayout,
  blockSize: number,
): KvCachePlan {
  const keys: string[] = [];
  const specs: CacheSpec[] = [];
  const members: number[][] = [];
  const bytes: number[] = [];
  const layerSpecs: (CacheSpec | undefined)[] = [];
  const layerGroups: number[] = [];
  states.forEach((state, i) => {
    if (state.kind === "none") {
      layerSpecs.push(undefined);
      layerGroups.push(-1);
      return;
    }
    const { spec, key } =
      state.kind === "slot"
        ? { spec: new StateSlotSpec(blockSize), key: "slot" }
        : cacheSpecFor({ kind: state.attention, window: state.window }, blockSize, kvLayout);
    let g = keys.indexOf(key);
    if (g < 0) {
      g = keys.length;
      keys.push(key);
      specs.push(spec);
      members.push([]);
      bytes.push(0);
    }
    (members[g] as number[]).push(i);
    bytes[g] =
      (bytes[g] as number) +
      (state.kind === "slot"
        ? 4 * state.floats
        : blockSize * LayerKvCache.bytesPerToken(state.numKvHeads, state.headDim, state.vHeadDim));
    layerSpecs.push(spec);
    layerGroups.push(g);
  });
  const groups = keys.map((key, g) => ({
    key,
    spec: specs[g] as CacheSpec,
    layers: members[g] as number[],
    bytesPerBlock: bytes[g] as number,
  }));
  return { layerSpecs, layerGroups, groups };
}

/** Bytes of KV cache one sequence of `numTokens` tokens holds across all groups. */
export function kvBytesPerSequence(groups: readonly KvCacheGroup[], numTokens: number): number {
  let total = 0;
  for (const g of groups) total += g.spec.blocksNeeded(numTokens) * g.bytesPerBlock;
  return total;
}

/**
 * The theoretical KV token capacity of `layout` over that of `baseline` for one byte budget, at a
 * context of `contextTokens`: the bytes one sequence of that length needs under `baseline` over
 * what it needs under `layout` (each group's blocks times its bytes per block). For 16 equal
 * layers of which 3 are global, window-sized against full tends to 16/3 as the context grows.
 */
export function kvCapacityRatio(
  states: readonly LayerState[],
  layout: KvLayout,
  baseline: KvLayout,
  blockSize: number,
  contextTokens: number,
): number {
  if (
    !Number.isInteger(contextTokens) ||
    contextTokens < 1 ||
    !Number.isInteger(blockSize) ||
    blockSize < 1
  ) {
    throw new BringupError(
      "KV_RATIO_INVALID",
      `the context (${contextTokens}) and block size (${blockSize}) must be whole numbers >= 1.`,
    );
  }
  const of = (l: KvLayout) => kvBytesPerSequence(planKvCache(states, l, blockSize).groups, contextTokens);
  return of(baseline) / of(layout);
}

/**
 * Splits a byte budget between groups in proportion to what one sequence of `maxModelLen` tokens
 * needs in each (vLLM-style), so the number of max-length sequences that fit is the same in every
 * group up to whole blocks: it takes the largest fill f (sequences per group) for which every
 * group's ceil(f x its blocks per sequence) blocks fit the budget, then gives the bytes left block
 * by block to the group that fits the fewest sequences. Rounding each group down alone would cost
 * a small group (a ring of a few blocks) up to a whole block: several percent of its sequences.
 */
export function splitKvBudget(
  groups: readonly KvCacheGroup[],
  budgetBytes: number,
  maxModelLen: number,
): number[] {
  const need = groups.map((g) => g.spec.blocksNeeded(maxModelLen));
  const cost = (blocks: readonly number[]) =>
    groups.reduce((s, g, i) => s + (blocks[i] as number) * g.bytesPerBlock, 0);
  // A ring (a few blocks) is kept whole when the budget allows, so a budget under one max-length
  // sequence still runs the longest request its growing groups can hold.
  const rings = groups.map((g, i) => (g.spec.ringBlocks > 0 ? (need[i] as number) : 0));
  const floor = cost(rings) <= budgetBytes ? rings : groups.map(() => 0);
  // Blocks of each group at fill k / need[h] (integers only, so no rounding drift).
  const blocksAt = (k: number, h: number) =>
    need.map((n, i) => Math.max(floor[i] as number, Math.ceil((k * n) / (need[h] as number))));
  let blocks = groups.map(() => 0);
  let best = -1;
  groups.forEach((g, h) => {
    // The largest k with blocksAt(k, h) within budget; cost grows with k.
    let lo = 0;
    let hi = Math.floor(budgetBytes / g.bytesPerBlock) + 1;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (cost(blocksAt(mid, h)) <= budgetBytes) lo = mid;
      else hi = mid;
    }
    const fill = lo / (need[h] as number);
    if (fill > best) {
      best = fill;
      blocks = blocksAt(lo, h);
    }
  });
  let left = budgetBytes - cost(blocks);
  for (;;) {
    let pick = -1;
    let lowest = Number.POSITIVE_INFINITY;
    groups.forEach((g, i) => {
      const fill = (blocks[i] as number) / (need[i] as number);
      if (g.bytesPerBlock <= left && fill < lowest) {
        lowest = fill;
        pick = i;
      }
    });
    if (pick < 0) return blocks;
    blocks[pick] = (blocks[pick] as number) + 1;
    left -= (groups[pick] as KvCacheGroup).bytesPerBlock;
  }
}

/**
 * Tokens of context the cache holds at `maxModelLen`: how many max-length sequences fit (the
 * fewest over groups), times the tokens of full-storage blocks one such sequence spans. With full
 * storage only this is exactly blocks x blockSize; under one max-length sequence it is the
 * longest request the cache can hold.
 */
export function kvTokenCapacity(
  groups: readonly KvCacheGroup[],
  blocks: readonly number[],
  maxModelLen: number,
  blockSize: number,
): number {
  const spanned = Math.ceil(maxModelLen / blockSize) * blockSize;
  let capacity = Number.POSITIVE_INFINITY;
  groups.forEach((g, i) => {
    const have = blocks[i] as number;
    const need = g.spec.blocksNeeded(maxModelLen);
    // Under one max-length sequence a group holds one sequence of its blocks' tokens (a ring short
    // of whole limits every request to it). Otherwise integer arithmetic first, so a full group
    // gives blocks x blockSize exactly.
    const holds = have < need ? have * blockSize : Math.floor((have * spanned) / need);
    capacity = Math.min(capacity, holds);
  });
  return capacity;
}
