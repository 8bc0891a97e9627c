import { BringupError } from "../../common/errors.js";
import { type BlockPlacement, placementOf } from "./placement.js";
import {
  floatsPerSequence,
  floatsPerSlot,
  isPerToken,
  type KvLayout,
  type LayerStates,
  type PerSequenceState,
  type PerTokenState,
  type StateSpec,
  underLayout,
} from "./state-spec.js";

/** States of layers that share block tables: placed alike, one block costing them all `bytesPerBlock`. */
export interface BlockGroup {
  readonly pool: "blocks";
  /** Equal for states that allocate and place positions alike (see placementOf). */
  readonly key: string;
  /** The kind of its first state (limits report it). */
  readonly kind: StateSpec["kind"];
  /** How a sequence's blocks in the group hold its positions (blocksNeeded, ring). */
  readonly placement: BlockPlacement;
  /** Layer indices in the group. */
  readonly layers: readonly number[];
  /** Bytes one block takes summed over the group's states. */
  readonly bytesPerBlock: number;
}

/** Every per-sequence state: a sequence takes one slot for all of them, whatever its length. */
export interface SlotPool {
  readonly pool: "slots";
  readonly key: "slots";
  readonly kind: StateSpec["kind"];
  readonly layers: readonly number[];
  /** Bytes one slot takes summed over every layer's per-sequence states. */
  readonly bytesPerSlot: number;
}

/** What the budget is split over: block groups and at most one slot pool. */
export type StatePool = BlockGroup | SlotPool;

/**
 * One state of one layer as planned: its spec under the layout, its pool, and for a per-token
 * state its own placement (where positions go and what a query reads: its mask may differ from
 * its group's).
 */
export type PlannedState =
  | {
      readonly name: string;
      readonly spec: PerTokenState;
      readonly pool: number;
      readonly placement: BlockPlacement;
    }
  | {
      readonly name: string;
      readonly spec: PerSequenceState;
      readonly pool: number;
      readonly placement?: undefined;
    };

/** Each layer's planned states, and the pools in first-layer order. */
export interface KvCachePlan {
  readonly layers: readonly (readonly PlannedState[])[];
  readonly pools: readonly StatePool[];
}

/** Units (blocks, or a slot) a sequence of `numTokens` tokens holds in `pool`. */
export function unitsNeeded(pool: StatePool, numTokens: number): number {
  return pool.pool === "blocks" ? pool.placement.blocksNeeded(numTokens) : numTokens > 0 ? 1 : 0;
}

/** Bytes one unit of `pool` takes. */
export function unitBytes(pool: StatePool): number {
  return pool.pool === "blocks" ? pool.bytesPerBlock : pool.bytesPerSlot;
}

/** Whether a sequence needs the same units in `pool` at every length past a few blocks (a ring, a slot). */
function bounded(pool: StatePool): boolean {
  return pool.pool === "slots" || pool.placement.ringBlocks > 0;
}

/**
 * How layers that declare `states` keep them under `kvLayout` with blocks of `blockSize` tokens:
 * per-token states in block groups (a sliding window as a ring where the layout says so), every
 * per-sequence state in one pool of slots (a sequence takes one slot there for all its layers).
 */
export function planKvCache(
  states: readonly LayerStates[],
  kvLayout: KvLayout,
  blockSize: number,
): KvCachePlan {
  interface Draft {
    key: string;
    kind: StateSpec["kind"];
    placement?: BlockPlacement;
    layers: number[];
    bytes: number;
  }
  const drafts: Draft[] = [];
  const poolOf = (key: string, kind: StateSpec["kind"], layer: number, placement?: BlockPlacement) => {
    let g = drafts.findIndex((d) => d.key === key);
    if (g < 0) {
      g = drafts.length;
      drafts.push({ key, kind, ...(placement ? { placement } : {}), layers: [], bytes: 0 });
    }
    const d = drafts[g] as Draft;
    if (!d.layers.includes(layer)) d.layers.push(layer);
    return g;
  };
  const layers = states.map((layerStates, i) =>
    Object.entries(layerStates).map(([name, asked]): PlannedState => {
      const spec = underLayout(asked, kvLayout);
      if (!isPerToken(spec)) {
        const pool = poolOf("slots", spec.kind, i);
        (drafts[pool] as Draft).bytes += 4 * floatsPerSequence(spec);
        return { name, spec, pool };
      }
      const { placement, key } = placementOf(spec, blockSize);
      const pool = poolOf(key, spec.kind, i, placement);
      (drafts[pool] as Draft).bytes += 4 * blockSize * floatsPerSlot(spec);
      return { name, spec, pool, placement };
    }),
  );
  const pools = drafts.map(
    ({ key, kind, placement, layers, bytes }): StatePool =>
      placement === undefined
        ? { pool: "slots", key: "slots", kind, layers, bytesPerSlot: bytes }
        : { pool: "blocks", key, kind, placement, layers, bytesPerBlock: bytes },
  );
  return { layers, pools };
}

/** Bytes of KV cache one sequence of `numTokens` tokens holds across all groups. */
export function kvBytesPerSequence(pools: readonly StatePool[], numTokens: number): number {
  let total = 0;
  for (const p of pools) total += unitsNeeded(p, numTokens) * unitBytes(p);
  return total;
}

/**
 * The theoretical KV token capacity of `layout` over that of `baseline` for one byte budget, at a
 * context of `contextTokens`: the bytes one sequence of that length needs under `baseline` over
 * what it needs under `layout` (each group's blocks times its bytes per block). For 16 equal
 * layers of which 3 are global, window-sized against full tends to 16/3 as the context grows.
 */
export function kvCapacityRatio(
  states: readonly LayerStates[],
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
  const of = (l: KvLayout) => kvBytesPerSequence(planKvCache(states, l, blockSize).pools, contextTokens);
  return of(baseline) / of(layout);
}

/**
 * Splits a byte budget between pools in proportion to what one sequence of `maxModelLen` tokens
 * needs in each (vLLM-style), so the number of max-length sequences that fit is the same in every
 * pool up to whole units (blocks, or slots): it takes the largest fill f (sequences per pool) for
 * which every pool's ceil(f x its units per sequence) units fit the budget, then gives the bytes
 * left unit by unit to the pool that fits the fewest sequences. Rounding each pool down alone
 * would cost a small pool (a ring of a few blocks) up to a whole block: several percent of its
 * sequences.
 */
export function splitKvBudget(
  groups: readonly StatePool[],
  budgetBytes: number,
  maxModelLen: number,
): number[] {
  const need = groups.map((g) => unitsNeeded(g, maxModelLen));
  const cost = (blocks: readonly number[]) =>
    groups.reduce((s, g, i) => s + (blocks[i] as number) * unitBytes(g), 0);
  // A ring (a few blocks) or a slot is kept whole when the budget allows, so a budget under one
  // max-length sequence still runs the longest request its growing groups can hold.
  const rings = groups.map((g, i) => (bounded(g) ? (need[i] as number) : 0));
  const floor = cost(rings) <= budgetBytes ? rings : groups.map(() => 0);
  // Blocks of each group at fill k / need[h] (integers only, so no rounding drift).
  const blocksAt = (k: number, h: number) =>
    need.map((n, i) => Math.max(floor[i] as number, Math.ceil((k * n) / (need[h] as number))));
  let blocks = groups.map(() => 0);
  let best = -1;
  groups.forEach((g, h) => {
    // A group a max-length sequence takes nothing of (rows of more positions than it has) sets no fill.
    if (need[h] === 0) return;
    // The largest k with blocksAt(k, h) within budget; cost grows with k.
    let lo = 0;
    let hi = Math.floor(budgetBytes / unitBytes(g)) + 1;
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
      if (unitBytes(g) <= left && fill < lowest) {
        lowest = fill;
        pick = i;
      }
    });
    if (pick < 0) return blocks;
    blocks[pick] = (blocks[pick] as number) + 1;
    left -= unitBytes(groups[pick] as StatePool);
  }
}

/**
 * Tokens of context the cache holds at `maxModelLen`: how many max-length sequences fit (the
 * fewest over groups), times the tokens of full-storage blocks one such sequence spans. With full
 * storage only this is exactly blocks x blockSize; under one max-length sequence it is the
 * longest request the cache can hold.
 */
export function kvTokenCapacity(
  groups: readonly StatePool[],
  blocks: readonly number[],
  maxModelLen: number,
  blockSize: number,
): number {
  const spanned = Math.ceil(maxModelLen / blockSize) * blockSize;
  let capacity = Number.POSITIVE_INFINITY;
  groups.forEach((g, i) => {
    const have = blocks[i] as number;
    const need = unitsNeeded(g, maxModelLen);
    // Under one max-length sequence a group holds one sequence of its blocks' tokens (a ring short
    // of whole limits every request to it). Otherwise integer arithmetic first, so a full group
    // gives blocks x blockSize exactly.
    const perBlock = g.pool === "blocks" ? g.placement.tokensPerBlock : blockSize;
    const holds = have < need ? have * perBlock : Math.floor((have * spanned) / need);
    capacity = Math.min(capacity, holds);
  });
  return capacity;
}
