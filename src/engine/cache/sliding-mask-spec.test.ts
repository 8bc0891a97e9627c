import { describe, expect, it } from "vitest";
import { FullCacheSpec } from "./full-spec.js";
import { SlidingMaskCacheSpec } from "./sliding-mask-spec.js";

describe("SlidingMaskCacheSpec", () => {
  it("keeps every position like full storage and attends only the window", () => {
    const mask = new SlidingMaskCacheSpec(4, 6);
    const full = new FullCacheSpec(4);
    for (const n of [1, 4, 5, 100]) expect(mask.blocksNeeded(n)).toBe(full.blocksNeeded(n));
    for (const p of [0, 3, 4, 99]) expect(mask.blockIndex(p)).toBe(full.blockIndex(p));
    expect(mask.ringBlocks).toBe(0);
    expect(mask.maxChunkTokens).toBe(Number.POSITIVE_INFINITY);
    expect([0, 5, 6, 100].map((p) => mask.firstVisible(p))).toEqual([0, 0, 1, 95]);
  });
});
