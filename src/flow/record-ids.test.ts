import { describe, expect, it } from "vitest";
import { nextSeriesId } from "./record-ids.js";

describe("nextSeriesId", () => {
  it("uses the series id first, then numbers later runs past the highest", () => {
    const series = "demo/decode-ab";
    expect(nextSeriesId(series, [])).toBe(series);
    expect(nextSeriesId(series, [series])).toBe(`${series}.2`);
    expect(nextSeriesId(series, [series, `${series}.2`, `${series}.7`])).toBe(`${series}.8`);
  });

  it("ignores ids that only share a prefix with the series", () => {
    const series = "demo/decode-ab";
    expect(nextSeriesId(series, ["demo/decode-ab-long", "demo/decode-ab.x", "demo/decode"])).toBe(series);
  });
});
