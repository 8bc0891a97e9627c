import { describe, expect, it } from "vitest";
import { BlockPlacement } from "../../cache/placement.js";
import type { ForwardBatch, ForwardContext } from "../../model/model.js";
import { pagedTables, stepPagedTables } from "./paged-tables.js";

const twoBlocks = [0, 1];
const batch: ForwardBatch = {
  tokens: [5, 6, 7],
  positions: [3, 4, 9],
  blockTables: [[twoBlocks], [twoBlocks], [[2, 3, 4]]],
  sequences: [
    { first: 0, count: 2, slot: -1 },
    { first: 2, count: 1, slot: -1 },
  ],
  logitRows: [1, 2],
};
const stepOf = (): ForwardContext => ({ batch, pool: undefined as never, switches: new Map() });

describe("stepPagedTables", () => {
  it("builds a step's tables once per group and window, as pagedTables builds them", () => {
    const full = new BlockPlacement(4, 0, false);
    const window = new BlockPlacement(4, 2, false);
    const step = stepOf();
    const first = stepPagedTables(step, full, 0);
    expect(first).toEqual(pagedTables(batch, full, 0));
    expect(Array.from(first.tables)).toEqual([0, 1, 2, 3, 4]);
    // Another layer's placement of the same window: the same tables.
    expect(stepPagedTables(step, new BlockPlacement(4, 0, false), 0)).toBe(first);
    expect(stepPagedTables(step, window, 0)).toEqual(pagedTables(batch, window, 0));
    expect(stepPagedTables(step, window, 0)).not.toBe(first);
    expect(stepPagedTables(stepOf(), full, 0)).not.toBe(first);
  });
});
