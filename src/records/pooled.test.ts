import { describe, expect, it } from "vitest";
import { pooledRatio, type RunRatio } from "./pooled.js";
import { Z975 } from "./student-t.js";

/** A run with log ratio `y` and log standard error `se`, as a record states it. */
function run(y: number, se: number): RunRatio {
  return { ratio: Math.exp(y), ci95: [Math.exp(y - Z975 * se), Math.exp(y + Z975 * se)] };
}

/** A seeded standard normal (Box-Muller over a 32-bit LCG), so the simulation is the same each run. */
function normals(seed: number): () => number {
  let state = seed >>> 0;
  const uniform = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state + 0.5) / 2 ** 32;
  };
  return () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}

describe("pooledRatio", () => {
  it("needs two runs with positive ratios and intervals", () => {
    expect(pooledRatio([run(0.1, 0.1)])).toBeUndefined();
    expect(pooledRatio([run(0.1, 0.1), { ratio: 1.2, ci95: [0, 2] }])).toBeUndefined();
  });

  it("weights agreeing runs by their precision, with no between-run variance", () => {
    const pooled = pooledRatio([run(0.2, 0.1), run(0.2, 0.05), run(0.2, 0.2)]);
    expect(pooled?.betweenRuns).toBe(0);
    expect(Math.log(pooled?.estimate as number)).toBeCloseTo(0.2, 10);
    expect(pooled?.runs).toBe(3);
  });

  it("widens the interval when runs disagree more than their intervals allow", () => {
    const agree = pooledRatio([run(0.1, 0.05), run(0.12, 0.05), run(0.11, 0.05)]);
    const disagree = pooledRatio([run(-0.3, 0.05), run(0.5, 0.05), run(0.1, 0.05)]);
    expect(disagree?.betweenRuns).toBeGreaterThan(0);
    const width = (p: typeof agree) => Math.log((p?.high as number) / (p?.low as number));
    expect(width(disagree)).toBeGreaterThan(5 * width(agree));
  });

  it("covers the true ratio in about 95% of simulated series of five noisy runs", () => {
    const normal = normals(7);
    const truth = Math.log(1.3);
    let covered = 0;
    const trials = 2000;
    for (let t = 0; t < trials; t++) {
      const runs = Array.from({ length: 5 }, () => {
        const se = 0.05 + 0.15 * Math.abs(normal());
        // Each run's own effect differs from the truth by a between-run spread of 0.1.
        return run(truth + 0.1 * normal() + se * normal(), se);
      });
      const pooled = pooledRatio(runs);
      if (pooled && pooled.low <= 1.3 && 1.3 <= pooled.high) covered++;
    }
    expect(covered / trials).toBeGreaterThan(0.93);
    expect(covered / trials).toBeLessThan(0.995);
  });
});
