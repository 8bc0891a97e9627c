import { describe, expect, it } from "vitest";
import { BenchRecord, type BenchRecordInput } from "../records/index.js";
import {
  formatFigure,
  formatMethod,
  formatRecordFigure,
  formatTokens,
  formatValue,
  median,
} from "./figure.js";

function record(overrides: Partial<BenchRecordInput>): BenchRecord {
  return BenchRecord.parse({
    schema: "bringup.record/1",
    id: "demo/decode",
    port: "demo",
    metric: "decode_tok_s",
    label: "decode",
    unit: "tok/s",
    method: "single-run",
    source: { kind: "reported", where: "the seed page", stated_method: "single run" },
    arms: [{ name: "port", figure: { shape: "point", value: 43.9 } }],
    recorded_at: "2026-01-01T00:00:00Z",
    ...overrides,
  });
}

describe("formatFigure", () => {
  it("writes each shape in its unit", () => {
    expect(formatFigure({ shape: "point", value: 43.9 }, "tok/s")).toBe("43.9 tok/s");
    expect(formatFigure({ shape: "point", value: 35, decimals: 1 }, "tok/s")).toBe("35.0 tok/s");
    expect(formatFigure({ shape: "range", low: 2, high: 2.5, decimals: 2 }, "x")).toBe("2.00x to 2.50x");
    expect(formatFigure({ shape: "range", low: 22, high: 24 }, "tok/s")).toBe("22 to 24 tok/s");
    expect(formatFigure({ shape: "range", low: 1.35, high: 1.55 }, "x")).toBe("1.35x to 1.55x");
    expect(formatFigure({ shape: "fraction", passed: 3, total: 3 }, "count")).toBe("3/3");
    expect(formatFigure({ shape: "point", value: 854.3745, decimals: 4 }, "perplexity")).toBe("854.3745");
    expect(formatFigure({ shape: "fraction", passed: 2, total: 3 }, "needles")).toBe("2/3 needles");
    expect(formatFigure({ shape: "at-most", value: 0.4 }, "%")).toBe("within 0.4%");
    expect(formatFigure({ shape: "at-most", value: 12 }, "ms")).toBe("at most 12 ms");
    expect(formatFigure({ shape: "at-least", value: 5.33 }, "x")).toBe("at least 5.33x");
    expect(formatFigure({ shape: "point", value: 32768 }, "tokens")).toBe("32K tokens");
  });
});

describe("formatRecordFigure", () => {
  it("says no difference was shown when a ratio's interval holds 1", () => {
    const ab = (ci95: [number, number]) =>
      record({
        method: "same-pod-ab",
        source: { kind: "measured", tool: "bringup up" },
        arms: [
          { name: "a", samples: [10, 11] },
          { name: "b", samples: [12, 13] },
        ],
        comparison: { figure: { shape: "point", value: 1.07 }, ci95, better: "higher" },
      });
    expect(formatRecordFigure(ab([0.678, 1.701]))).toContain(
      "no difference was shown: ratio 1.07x, 95% CI 0.678x to 1.701x",
    );
    expect(formatRecordFigure(ab([1.02, 1.12]))).not.toContain("no difference");
  });

  it("prints a same-pod A/B with both arms, its context and its reported source", () => {
    const r = record({
      method: "same-pod-ab",
      context: "at one stream",
      arms: [
        { name: "kimi kernels", figure: { shape: "point", value: 44.5 } },
        { name: "stock op", figure: { shape: "point", value: 17.9 } },
      ],
    });
    expect(formatRecordFigure(r)).toBe("44.5 vs 17.9 tok/s at one stream — same-pod A/B, reported");
  });

  it("names every condition of a different-conditions record", () => {
    const r = record({
      method: "different-conditions",
      conditions: [
        { name: "nodes", a: "one", b: "two" },
        { name: "experts", a: "MXFP4", b: "FP8" },
      ],
      arms: [
        { name: "one node", figure: { shape: "point", value: 44.5 } },
        { name: "two nodes", figure: { shape: "range", low: 36.4, high: 38.2 } },
      ],
    });
    expect(formatMethod(r)).toBe("different conditions (nodes: one vs two; experts: MXFP4 vs FP8), reported");
    expect(formatValue(r)).toBe("44.5 tok/s vs 36.4 to 38.2 tok/s");
  });

  it("does not say reported twice when the method is reported", () => {
    const r = record({ method: "reported" });
    expect(formatRecordFigure(r)).toBe("43.9 tok/s — reported");
  });

  it("shows a ratio record by its ratio alone, without the baseline arm", () => {
    const record = BenchRecord.parse({
      schema: "bringup.record/1",
      id: "demo/capacity",
      port: "demo",
      metric: "kv_capacity_ratio",
      label: "KV token capacity",
      unit: "x",
      method: "reported",
      source: { kind: "reported", where: "a page", stated_method: "not stated" },
      arms: [
        { name: "full", figure: { shape: "point", value: 1 } },
        { name: "window-sized", figure: { shape: "point", value: 5.33 } },
      ],
      comparison: { figure: { shape: "point", value: 5.33 }, better: "higher" },
      recorded_at: "2026-12-02T00:00:00Z",
    });
    expect(formatRecordFigure(record)).toBe("ratio 5.33x — reported");
  });

  it("summarises measured samples by their median and prints the ratio with its interval", () => {
    const r = record({
      method: "same-pod-ab",
      source: { kind: "measured", tool: "bringup bench" },
      arms: [
        { name: "a", samples: [10, 12, 11] },
        { name: "b", samples: [20, 21, 23, 22] },
      ],
      comparison: { figure: { shape: "point", value: 1.95 }, ci95: [1.8, 2.1], better: "higher" },
      context: "2K to 517K",
    });
    expect(formatRecordFigure(r)).toBe(
      "medians 11 vs 21.5 tok/s (ratio 1.95x, 95% CI 1.8x to 2.1x), 2K to 517K — same-pod A/B",
    );
  });

  it("keeps the unit on each side for attached units", () => {
    const r = record({
      unit: "x",
      arms: [
        { name: "a", figure: { shape: "point", value: 1.35 } },
        { name: "b", figure: { shape: "point", value: 1.55 } },
      ],
      method: "same-node-ab",
    });
    expect(formatValue(r)).toBe("1.35x vs 1.55x");
  });
});

describe("median", () => {
  it("takes the middle of odd and the mean of the two middles of even samples", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });
});

describe("formatTokens", () => {
  it("uses binary K and M when they divide evenly", () => {
    expect(formatTokens(262144)).toBe("256K");
    expect(formatTokens(1048576)).toBe("1M");
    expect(formatTokens(500000)).toBe("500000");
  });
});
