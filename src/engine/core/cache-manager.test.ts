import { describe, expect, it } from "vitest";
import { CacheManager } from "./cache-manager.js";
import { everyKindPlan, sequence } from "./core-fixture.js";

describe("CacheManager", () => {
  const plan = everyKindPlan();

  it("keeps one block group per placement and one slot pool, each layer its storage's kinds", () => {
    expect(plan.pools.map((p) => [p.pool, p.key, p.layers])).toEqual([
      ["blocks", "full", [0, 3]],
      ["blocks", "window:6", [1]],
      ["slots", "slots", [2]],
    ]);
    const cache = new CacheManager(plan, [10, 6, 3]);
    const kinds = cache.storage.map((s) => [...s.all()].map((store) => store.kind));
    expect(kinds).toEqual([["paged-kv"], ["paged-kv"], ["slots", "slots"], ["paged-rows", "paged-rows"]]);
    expect(cache.maxChunkTokens).toBe(8);
  });

  it("grows a sequence's blocks up to its ring, holds one slot, and frees them all", () => {
    const cache = new CacheManager(plan, [10, 6, 3]);
    const seq = sequence(5, 3);
    expect(cache.tryAllocate(seq, 5)).toBe(true);
    expect(seq.tables.map((t) => t.length)).toEqual([2, 2, 1]);
    expect(cache.tryAllocate(seq, 30)).toBe(true);
    // 8 blocks of full storage, the ring's 4 (window 6 + chunk 8 - 1 positions), still one slot.
    expect(seq.tables.map((t) => t.length)).toEqual([8, 4, 1]);
    expect(cache.slotOf(seq)).toBe(seq.tables[2]?.[0]);
    // Not enough full blocks: nothing is taken.
    const other = sequence(12, 3);
    expect(cache.tryAllocate(other, 12)).toBe(false);
    expect(other.tables.map((t) => t.length)).toEqual([0, 0, 0]);
    cache.free(seq);
    expect(cache.usage().map((u) => u.used)).toEqual([0, 0, 0]);
    expect(cache.bytesUsed()).toBe(0);
  });

  it("names the first pool too small for a request", () => {
    const cache = new CacheManager(plan, [3, 6, 3]);
    expect(cache.shortfall(12)).toBeUndefined();
    expect(cache.shortfall(13)).toMatchObject({ pool: { key: "full" }, need: 4, have: 3 });
  });

  it("copies every state a sequence holds into a second one's own blocks and slot", () => {
    const cache = new CacheManager(plan, [10, 7, 3]);
    const from = sequence(9, 3);
    const to = sequence(9, 3);
    cache.tryAllocate(sequence(4, 3), 4); // so the two sequences' units differ from their indices
    cache.tryAllocate(from, 9);
    let value = 1;
    for (const layer of cache.storage)
      for (const store of layer.all()) {
        const data =
          store.kind === "paged-kv" ? store.keys : store.kind === "paged-rows" ? store.rows : store.data;
        for (let i = 0; i < data.length; i++) data[i] = value++;
      }
    expect(cache.copy(from, to)).toBe(true);
    expect(to.tables.map((t) => t.length)).toEqual(from.tables.map((t) => t.length));
    for (const layer of cache.storage) {
      for (const store of layer.all()) {
        if (store.kind === "slots") {
          expect(store.view(cache.slotOf(to))).toEqual(store.view(cache.slotOf(from)));
          expect(cache.slotOf(to)).not.toBe(cache.slotOf(from));
          continue;
        }
        const [data, width] =
          store.kind === "paged-kv" ? [store.keys, store.keyStride] : [store.rows, store.width];
        const size = store.placement.blockSize * width;
        const block = (b: number) => data.subarray(b * size, (b + 1) * size);
        (from.tables[store.group] as number[]).forEach((b, j) => {
          expect(block(to.tables[store.group]?.[j] as number)).toEqual(block(b));
        });
      }
    }
    // With no units free, nothing is copied.
    const third = sequence(9, 3);
    expect(cache.copy(to, third)).toBe(false);
    expect(third.tables.map((t) => t.length)).toEqual([0, 0, 0]);
  });

  it("hands every unit to another sequence", () => {
    const cache = new CacheManager(plan, [10, 6, 3]);
    const lead = sequence(6, 3);
    const child = sequence(6, 3);
    cache.tryAllocate(lead, 6);
    const held = lead.tables.map((t) => [...t]);
    cache.transfer(lead, child);
    expect(child.tables).toEqual(held);
    expect(lead.tables).toEqual([[], [], []]);
  });
});
