import { describe, expect, it } from "vitest";
import { relativeBucketTable } from "./relative-position-buckets.js";

const bucketOf = (table: Int32Array, d: number) => table[Math.min(d, table.length - 1)];

describe("relativeBucketTable", () => {
  it("gives T5's default layout (32 buckets up to 128): exact below 16, logarithmic to 128, then the last", () => {
    const table = relativeBucketTable(32, 128);
    // HF T5Attention._relative_position_bucket(-d, bidirectional=False, 32, 128), evaluated in float32 outside the engine.
    const expected: Record<number, number> = {
      0: 0,
      1: 1,
      15: 15,
      16: 16,
      17: 16,
      18: 16,
      20: 17,
      23: 18,
      24: 19,
      32: 21,
      45: 23,
      64: 26,
      90: 29,
      100: 30,
      127: 31,
      128: 31,
    };
    for (const [d, b] of Object.entries(expected))
      expect([Number(d), bucketOf(table, Number(d))]).toEqual([Number(d), b]);
    expect(bucketOf(table, 1_000_000)).toBe(31);
  });

  it("never decreases with distance and reaches the last bucket at maxDistance", () => {
    const table = relativeBucketTable(8, 64);
    for (let d = 1; d < table.length; d++) expect(table[d]).toBeGreaterThanOrEqual(table[d - 1] as number);
    expect(bucketOf(table, 64)).toBe(7);
    expect(bucketOf(table, 63)).toBeLessThanOrEqual(7);
  });

  it("refuses a layout with no logarithmic range", () => {
    expect(() => relativeBucketTable(32, 16)).toThrow(RangeError);
    expect(() => relativeBucketTable(1, 8)).toThrow(RangeError);
  });
});
