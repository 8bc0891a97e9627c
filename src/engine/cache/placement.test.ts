import { describe, expect, it } from "vitest";
import { BlockPlacement, placementOf } from "./placement.js";

/** Whether positions lo..hi land in distinct ring slots (no two share block index and offset). */
function distinctSlots(spec: BlockPlacement, lo: number, hi: number): boolean {
  const seen = new Set<number>();
  for (let p = lo; p <= hi; p++) {
    const slot = spec.blockIndex(p) * spec.blockSize + (p % spec.blockSize);
    if (seen.has(slot)) return false;
    seen.add(slot);
  }
  return true;
}

describe("BlockPlacement of a sliding window kept as a ring", () => {
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
      const spec = new BlockPlacement(blockSize, window, true);
      const C = spec.maxChunkTokens;
      expect(C).toBe(Math.ceil(window / blockSize) * blockSize);
      // A chunk s..s+C-1 is written before its first query (at s) reads back to s - window + 1.
      for (let s = window; s < window + 3 * blockSize * spec.ringBlocks; s++) {
        expect(distinctSlots(spec, s - window + 1, s + C - 1)).toBe(true);
      }
      const smaller = Object.assign(Object.create(BlockPlacement.prototype), spec, {
        ringBlocks: spec.ringBlocks - 1,
      }) as BlockPlacement;
      let collides = false;
      for (let s = window; s < window + blockSize && !collides; s++)
        collides = spec.ringBlocks === 1 || !distinctSlots(smaller, s - window + 1, s + C - 1);
      expect(collides).toBe(true);
    },
  );

  it("sizes the ring to window + chunk - 1 positions", () => {
    expect(BlockPlacement.ringSize(6, 8, 4)).toBe(4);
    expect(BlockPlacement.ringSize(4, 1, 4)).toBe(1);
    expect(BlockPlacement.ringSize(5, 1, 4)).toBe(2);
    expect(new BlockPlacement(16, 128, true).ringBlocks).toBe(16);
  });

  it("grows a sequence's blocks up to the ring and cycles positions through it", () => {
    const spec = new BlockPlacement(4, 6, true);
    expect(spec.ringBlocks).toBe(4);
    expect([1, 4, 5, 16, 17, 1000].map((n) => spec.blocksNeeded(n))).toEqual([1, 1, 2, 4, 4, 4]);
    expect([0, 3, 4, 15, 16, 19, 20].map((p) => spec.blockIndex(p))).toEqual([0, 0, 1, 3, 0, 0, 1]);
    expect([0, 5, 6, 100].map((p) => spec.firstVisible(p))).toEqual([0, 0, 1, 95]);
  });

  it("refuses a window below one position", () => {
    const sliding = { numKvHeads: 1, headDim: 4, vHeadDim: 4, window: 0 };
    expect(() => placementOf({ ...sliding, kind: "sliding-window" }, 4)).toThrow(/sliding_window/);
    expect(() => placementOf({ ...sliding, kind: "sliding-mask" }, 4)).toThrow(/sliding_window/);
  });
});

describe("placementOf", () => {
  const kv = { numKvHeads: 2, headDim: 8, vHeadDim: 8 };

  it("keeps every position for full attention, a latent and indexer keys, sharing one key", () => {
    for (const spec of [
      { ...kv, kind: "full" as const },
      { kind: "latent" as const, latentDim: 16, ropeDim: 4 },
      { kind: "indexer-keys" as const, headDim: 8 },
    ]) {
      const { placement, key } = placementOf(spec, 4);
      expect(key).toBe("full");
      expect([placement.ringBlocks, placement.maxChunkTokens]).toEqual([0, Number.POSITIVE_INFINITY]);
      expect([1, 4, 5, 100].map((n) => placement.blocksNeeded(n))).toEqual([1, 1, 2, 25]);
      expect([0, 99].map((p) => placement.firstVisible(p))).toEqual([0, 0]);
    }
  });

  it("keeps a sliding mask in the full layers' tables, attending only the window", () => {
    const { placement, key } = placementOf({ ...kv, kind: "sliding-mask", window: 6 }, 4);
    expect(key).toBe("full");
    expect(placement.ringBlocks).toBe(0);
    expect([1, 4, 5, 100].map((n) => placement.blocksNeeded(n))).toEqual([1, 1, 2, 25]);
    expect([0, 5, 6, 100].map((p) => placement.firstVisible(p))).toEqual([0, 0, 1, 95]);
  });

  it("gives each window its own ring group", () => {
    const ring = placementOf({ ...kv, kind: "sliding-window", window: 128 }, 16);
    expect(ring.key).toBe("window:128");
    expect(ring.placement.ringBlocks).toBe(16);
    expect(ring.placement.firstVisible(200)).toBe(73);
  });
});

describe("BlockPlacement of compressed rows", () => {
  it("keeps one row per ratio positions, a block holding blockSize rows, rows of one ratio sharing tables", () => {
    const { placement, key } = placementOf({ kind: "compressed", width: 8, ratio: 4 }, 16);
    expect(key).toBe("compressed:4");
    expect(placement.tokensPerBlock).toBe(64);
    // Row r exists once positions up to (r + 1) x 4 - 1 have run.
    expect([0, 3, 4, 64, 67, 68].map((n) => placement.blocksNeeded(n))).toEqual([0, 0, 1, 1, 1, 2]);
    expect(placement.slot([7, 2], 17)).toBe(2 * 16 + 1);
    expect(placementOf({ kind: "compressed", width: 3, ratio: 4 }, 16).key).toBe(key);
  });

  it("refuses a ratio that is not a whole number of positions", () => {
    expect(() => placementOf({ kind: "compressed", width: 8, ratio: 0 }, 16)).toThrow(
      expect.objectContaining({ code: "COMPRESS_RATIO_INVALID" }),
    );
  });
});
