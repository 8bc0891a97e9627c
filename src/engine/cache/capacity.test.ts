import { describe, expect, it } from "vitest";
import { type AttentionSpec, gqaStates } from "../blocks/attention/gqa-attention.js";
import {
  kvBytesPerSequence,
  kvCapacityRatio,
  kvTokenCapacity,
  planKvCache,
  splitKvBudget,
  unitBytes,
  unitsNeeded,
} from "./capacity.js";
import type { KvLayout, LayerStates } from "./state-spec.js";

const attention: AttentionSpec = {
  kind: "full",
  window: 0,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  vHeadDim: 8,
  ropeTheta: 10000,
  partialRotaryFactor: 1,
  bias: false,
  qkNorm: false,
  sinks: false,
};

/** The states of `n` attention layers, global where `global` says, else sliding with `window`. */
function config(
  n: number,
  global: (i: number) => boolean,
  window: number,
  sliding?: Partial<AttentionSpec>,
): LayerStates[] {
  return Array.from({ length: n }, (_, i) =>
    gqaStates(global(i) ? attention : { ...attention, ...sliding, kind: "sliding", window }),
  );
}

// 16 layers, 3 of them global, as the MiMo port's layer mix.
const mimoLike = config(16, (i) => i % 5 === 0 && i < 15, 32);
const bytesPerToken = 4 * 2 * (16 + 8);

describe("KV capacity", () => {
  it("plans one group for the sliding layers and one for the global layers", () => {
    const plan = planKvCache(mimoLike, "window-sized", 16);
    expect(plan.pools.map((g) => [g.key, g.layers.length, unitBytes(g)])).toEqual([
      ["full", 3, 3 * 16 * bytesPerToken],
      ["window:32", 13, 13 * 16 * bytesPerToken],
    ]);
    const ring = plan.pools[1];
    expect(ring?.pool === "blocks" && ring.placement.ringBlocks).toBe(4);
    // The full layout keeps the sliding layers in the global layers' tables, each with its own mask.
    const full = planKvCache(mimoLike, "full", 16);
    expect(full.pools.map((g) => [g.key, g.layers.length])).toEqual([["full", 16]]);
    const masks = full.layers.flat().filter((s) => s.spec.kind === "sliding-mask");
    expect(masks).toHaveLength(13);
    expect(masks.map((s) => s.placement?.firstVisible(100))).toEqual(Array(13).fill(69));
  });

  it("the ratio is full blocks per sequence over window-sized blocks per sequence, tending to 16/3", () => {
    let previous = 0;
    for (const context of [64, 1000, 4096, 32768, 1 << 20]) {
      const blocks = Math.ceil(context / 16);
      const expected = (16 * blocks) / (3 * blocks + 13 * Math.min(blocks, 4));
      const ratio = kvCapacityRatio(mimoLike, "window-sized", "full", 16, context);
      expect(ratio).toBeCloseTo(expected, 12);
      expect(ratio).toBeGreaterThanOrEqual(previous);
      previous = ratio;
    }
    // 16 x 2048 / (3 x 2048 + 13 x 4) at 32K.
    expect(kvCapacityRatio(mimoLike, "window-sized", "full", 16, 32768)).toBeCloseTo(5.28857, 5);
    expect(16 / 3 - previous).toBeLessThan(0.002);
    expect(kvCapacityRatio(mimoLike, "full", "window-sized", 16, 32768)).toBeCloseTo(6196 / 32768, 12);
    expect(
      kvCapacityRatio(
        config(4, () => true, 0),
        "window-sized",
        "full",
        16,
        5000,
      ),
    ).toBe(1);
  });

  it("weighs each group by its own bytes per block", () => {
    // Sliding layers with twice the KV heads cost twice as much per block.
    const wide = config(4, (i) => i === 0, 8, { numKvHeads: 4, numHeads: 8 });
    const blocks = Math.ceil(100 / 4);
    const ring = Math.ceil((8 + 8 - 1) / 4);
    const expected = (blocks + 3 * 2 * blocks) / (blocks + 3 * 2 * ring);
    expect(kvCapacityRatio(wide, "window-sized", "full", 4, 100)).toBeCloseTo(expected, 12);
    expect(() => kvCapacityRatio(wide, "window-sized", "full", 4, 0)).toThrow(/context/);
  });

  it.each([
    [1_000_000, 100],
    [12_345_678, 333],
    [65_536, 64],
  ])("budget %i at max_model_len %i: full storage holds exactly blocks x blockSize", (budget, maxLen) => {
    const groups = planKvCache(
      config(4, () => true, 0),
      "full",
      16,
    ).pools;
    const blocks = splitKvBudget(groups, budget, maxLen);
    expect(blocks).toEqual([Math.floor(budget / (4 * 16 * bytesPerToken))]);
    expect(kvTokenCapacity(groups, blocks, maxLen, 16)).toBe((blocks[0] as number) * 16);
  });

  it.each<[KvLayout, number]>([
    ["window-sized", 1 << 30],
    ["window-sized", 50_000_000],
    ["full", 1 << 30],
  ])(
    "%s, budget %i: every group fits the same number of max-length sequences, within the budget",
    (layout, budget) => {
      const groups = planKvCache(mimoLike, layout, 16).pools;
      const maxLen = 32768;
      const blocks = splitKvBudget(groups, budget, maxLen);
      const used = groups.reduce((s, g, i) => s + (blocks[i] as number) * unitBytes(g), 0);
      expect(used).toBeLessThanOrEqual(budget);
      expect(budget - used).toBeLessThan(Math.min(...groups.map(unitBytes)));
      const fits = groups.map((g, i) => (blocks[i] as number) / unitsNeeded(g, maxLen));
      const ideal = budget / kvBytesPerSequence(groups, maxLen);
      // The fewest sequences any group fits is the ideal within 0.2%; no group holds more than one
      // block beyond the ideal.
      expect(Math.abs(Math.min(...fits) / ideal - 1)).toBeLessThan(0.002);
      groups.forEach((g, i) => {
        expect((fits[i] as number) - 1 / unitsNeeded(g, maxLen)).toBeLessThanOrEqual(ideal);
      });
    },
  );

  it("the capacity of window-sized over full for one budget is the theoretical ratio within 0.2% at 32K", () => {
    const capacity = (layout: KvLayout) => {
      const groups = planKvCache(mimoLike, layout, 16).pools;
      return kvTokenCapacity(groups, splitKvBudget(groups, 1 << 28, 32768), 32768, 16);
    };
    const measured = capacity("window-sized") / capacity("full");
    const theory = kvCapacityRatio(mimoLike, "window-sized", "full", 16, 32768);
    expect(Math.abs(measured / theory - 1)).toBeLessThan(0.002);
  });

  it("under one max-length sequence, is the longest request every group can hold", () => {
    const groups = planKvCache(mimoLike, "window-sized", 16).pools;
    // The global group holds 10 blocks; a ring short of its 4 blocks limits requests to 2 blocks.
    expect(kvTokenCapacity(groups, [10, 4], 32768, 16)).toBe(160);
    expect(kvTokenCapacity(groups, [10, 2], 32768, 16)).toBe(32);
    expect(kvTokenCapacity(groups, [4096, 8], 32768, 16)).toBe(65536);
  });
});

describe("compressed rows in the plan", () => {
  // A ring of 8 keys and rows of 16 floats, one per 8 positions (DeepSeek-V4's heavily compressed layer).
  const states: LayerStates[] = [
    {
      kv: { kind: "sliding-window", window: 8, numKvHeads: 1, headDim: 16, vHeadDim: 0 },
      compressed: { kind: "compressed", width: 16, ratio: 8 },
    },
  ];

  it("take blocks of their own, a block spanning ratio x blockSize positions", () => {
    const { pools } = planKvCache(states, "window-sized", 4);
    const rows = pools.find((p) => p.key === "compressed:8");
    expect(rows && unitBytes(rows)).toBe(4 * 4 * 16);
    expect(rows && unitsNeeded(rows, 31)).toBe(1);
    expect(rows && unitsNeeded(rows, 32)).toBe(1);
    expect(rows && unitsNeeded(rows, 40)).toBe(2);
    // Two rows' blocks hold a sequence of 64 positions, not 8.
    const blocks = pools.map((p) => (p.key === "compressed:8" ? 2 : 100));
    expect(kvTokenCapacity(pools, blocks, 128, 4)).toBe(64);
  });

  it("split a budget without a share for rows a max-length sequence never fills", () => {
    const { pools } = planKvCache(states, "window-sized", 4);
    // max_model_len 6: no row closes, so the ring takes the budget.
    const split = splitKvBudget(pools, 10_000, 6);
    expect(split.every(Number.isFinite)).toBe(true);
    expect(split[0]).toBeGreaterThan(0);
  });
});
