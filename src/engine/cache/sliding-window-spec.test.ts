import { describe, expect, it } from "vitest";
import { SlidingWindowCacheSpec } from "./sliding-window-spec.js";

/** Whether positions lo..hi land in distinct ring slots (no two share block index and offset). */
function distinctSlots(spec: SlidingWindowCacheSpec, lo: number, hi: number): boolean {
  const seen = new Set<number>();
  for (let p = lo; p <= hi; p++) {
    const slot = spec.blockIndex(p) * spec.blockSize + (p % spec.blockSize);
    if (seen.has(slot)) return false;
    seen.add(slot);
  }
  return true;
}

describe("SlidingWindowCacheSpec", () => {
  it.each([
    [1, 4],
    [6, 4],
    [8, 4],
    [9, 4],
    [16, 16],
    [128, 16],
    [5, 1],
  ])(
    "window %i, block %i: the ring holds a step's window plus its chunk at every alignment, and no fewer blocks would",
    (window, blockSize) => {
      const spec = new SlidingWindowCacheSpec(blockSize, window);
      const C = spec.maxChunkTokens;
      expect(C).toBe(Math.ceil(window / blockSize) * blockSize);
      // A chunk s..s+C-1 is written before its first query (at s) reads back to s - window + 1.
      for (let s = window; s < window + 3 * blockSize * spec.ringBlocks; s++) {
        expect(distinctSlots(spec, s - window + 1, s + C - 1)).toBe(true);
      }
      const smaller = Object.assign(Object.create(SlidingWindowCacheSpec.prototype), spec, {
        ringBlocks: spec.ringBlocks - 1,
      }) as SlidingWindowCacheSpec;
      let collides = false;
      for (let s = window; s < window + blockSize && !collides; s++)
        collides = spec.ringBlocks === 1 || !distinctSlots(smaller, s - window + 1, s + C - 1);
      expect(collides).toBe(true);
    },
  );

  it("sizes the ring to window + chunk - 1 positions", () => {
    expect(SlidingWindowCacheSpec.ringSize(6, 8, 4)).toBe(4);
    expect(SlidingWindowCacheSpec.ringSize(4, 1, 4)).toBe(1);
    expect(SlidingWindowCacheSpec.ringSize(5, 1, 4)).toBe(2);
    expect(new SlidingWindowCacheSpec(16, 128).ringBlocks).toBe(16);
  });

  it("grows a sequence's blocks up to the ring and cycles positions through it", () => {
    const spec = new SlidingWindowCacheSpec(4, 6);
    expect(spec.ringBlocks).toBe(4);
    expect([1, 4, 5, 16, 17, 1000].map((n) => spec.blocksNeeded(n))).toEqual([1, 1, 2, 4, 4, 4]);
    expect([0, 3, 4, 15, 16, 19, 20].map((p) => spec.blockIndex(p))).toEqual([0, 0, 1, 3, 0, 0, 1]);
    expect([0, 5, 6, 100].map((p) => spec.firstVisible(p))).toEqual([0, 0, 1, 95]);
  });

  it("refuses a window below one position", () => {
    expect(() => new SlidingWindowCacheSpec(4, 0)).toThrow(/sliding_window/);
  });
});
