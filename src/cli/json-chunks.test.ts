import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonChunks } from "./json-chunks.js";

describe("jsonChunks", () => {
  it("joins to JSON.stringify's text for any JSON value, at any indent and depth", () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 0, max: 4 }),
        (v, i, d) => {
          expect([...jsonChunks(v, i, d)].join("")).toBe(JSON.stringify(v, null, i));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("writes what JSON.stringify writes of undefined, functions, NaN and toJSON", () => {
    const value = {
      a: undefined,
      f: () => 1,
      n: Number.NaN,
      list: [undefined, () => 1, 2, { toJSON: () => "t" }],
      d: new Date(0),
      nested: { deep: [1, [2, { x: undefined }]], empty: {}, none: [] },
    };
    for (const depth of [0, 1, 2, 3, 9])
      expect([...jsonChunks(value, 2, depth)].join("")).toBe(JSON.stringify(value, null, 2));
  });

  it("writes a long list a member at a time", () => {
    const report = { tensors: Array.from({ length: 1000 }, (_, i) => ({ name: `t${i}`, shape: [i, 2] })) };
    const pieces = [...jsonChunks(report)];
    expect(pieces.length).toBeGreaterThan(2000);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(80);
  });
});
