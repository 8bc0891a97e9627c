import { describe, expect, it } from "vitest";
import { bootstrapRatio, cv, seededRandom, studentT975, summarize } from "./stats.js";

describe("stats", () => {
  it("summarizes with chosen percentiles", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    const s = summarize(values, [50, 99]);
    expect(s.mean).toBe(50.5);
    expect(s.median).toBe(50.5);
    // Interpolated between ranks, as numpy (and so vLLM) computes percentiles.
    expect(s.percentiles["99"]).toBeCloseTo(99.01, 9);
    expect(s.count).toBe(100);
    expect(() => summarize(values, [0])).toThrow(/percentile 0/);
  });

  it("has an empty summary for no values", () => {
    expect(summarize([], [99]).count).toBe(0);
  });

  it("repeats a seeded sequence and differs across seeds", () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const c = seededRandom(8);
    const first = [a(), a(), a()];
    expect([b(), b(), b()]).toEqual(first);
    expect([c(), c(), c()]).not.toEqual(first);
    for (const x of first) expect(x >= 0 && x < 1).toBe(true);
  });

  it("gives Student's t quantiles close to the table", () => {
    expect(studentT975(1)).toBeCloseTo(12.706, 3);
    expect(studentT975(3)).toBeCloseTo(3.182, 1);
    expect(studentT975(7)).toBeCloseTo(2.365, 2);
    expect(studentT975(30)).toBeCloseTo(2.042, 3);
  });

  it("brackets the geometric mean of ratios, and widens with spread", () => {
    const tight = bootstrapRatio([2, 2.02, 1.98, 2.01, 1.99, 2]);
    expect(tight.estimate).toBeCloseTo(2, 2);
    expect(tight.low).toBeLessThan(tight.estimate);
    expect(tight.high).toBeGreaterThan(tight.estimate);
    expect(tight.low).toBeGreaterThan(1.9);
    const loose = bootstrapRatio([1.5, 2.6, 1.2, 3, 1.9, 2.2]);
    expect(loose.high - loose.low).toBeGreaterThan(tight.high - tight.low);
    expect(bootstrapRatio([1.1, 0.9, 1.05, 0.95]).low).toBeLessThan(1);
    expect(() => bootstrapRatio([1, 0])).toThrow(/positive/);
  });

  it("measures the coefficient of variation", () => {
    expect(cv([1, 1, 1])).toBe(0);
    expect(cv([1, 3])).toBeCloseTo(Math.SQRT2 / 2, 6);
  });
});
