import { describe, expect, it } from "vitest";
import { type BlockTrials, blockedRatioInterval, cv, seededRandom, summarize } from "./stats.js";

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

  it("gives the ratio of a blocked A/B with an interval that widens with spread", () => {
    const block = (a: number[], b: number[]): BlockTrials => ({ a, b });
    const tight = blockedRatioInterval([
      block([10, 10.2], [20, 20.1]),
      block([11, 10.9], [22.1, 21.8]),
      block([9.8, 10], [19.9, 20]),
    ]);
    expect(tight.estimate).toBeCloseTo(2, 2);
    expect(tight.df).toBe(8);
    expect(tight.low).toBeGreaterThan(1.95);
    expect(tight.high).toBeLessThan(2.05);
    const loose = blockedRatioInterval([
      block([10, 14], [20, 31]),
      block([11, 7], [15, 26]),
      block([9, 12], [25, 16]),
    ]);
    expect(loose.high - loose.low).toBeGreaterThan(tight.high - tight.low);
    expect(() => blockedRatioInterval([block([1, 0], [1, 1])])).toThrow(/positive/);
    expect(() => blockedRatioInterval([block([1, 1], [1, 1]), block([1], [1, 1])])).toThrow(/same number/);
  });

  describe("coverage of the nominal 95% interval", () => {
    // A deterministic simulation of the noise measured on these machines: single trials of one
    // A/B ranged from 48 to 220 tok/s (trial noise with heavy tails), whole runs moved by 2x
    // between sessions (block shifts), and speed wanders within a run (drift, AR(1) wander).
    interface Noise {
      readonly trial: number;
      readonly outlierRate: number;
      readonly outlier: number;
      readonly block: number;
      readonly drift: number;
      readonly wander: number;
    }
    const NOISES: Record<string, Noise> = {
      "lognormal trials": { trial: 0.3, outlierRate: 0, outlier: 0, block: 0.4, drift: 0, wander: 0 },
      "heavy-tailed trials": { trial: 0.25, outlierRate: 0.15, outlier: 1, block: 0.5, drift: 0, wander: 0 },
      "heavy tails, drift and wander": {
        trial: 0.2,
        outlierRate: 0.1,
        outlier: 0.9,
        block: 0.3,
        drift: 0.5,
        wander: 0.15,
      },
    };
    const RUNS = 2000;

    function gaussian(random: () => number): number {
      const u = 1 - random();
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
    }

    /** One ABBA run of `blocks` blocks whose b arm is truly `ratio` times a, under `noise`. */
    function simulatedRun(blocks: number, ratio: number, noise: Noise, random: () => number): BlockTrials[] {
      const run: BlockTrials[] = [];
      let wander = 0;
      let position = 0;
      for (let block = 0; block < blocks; block++) {
        const shift = gaussian(random) * noise.block;
        const trials: Record<"a" | "b", number[]> = { a: [], b: [] };
        for (const arm of ["a", "b", "b", "a"] as const) {
          wander = 0.8 * wander + gaussian(random) * noise.wander;
          const spread = random() < noise.outlierRate ? noise.outlier : noise.trial;
          const log =
            Math.log(60) +
            (arm === "b" ? Math.log(ratio) : 0) +
            shift +
            (noise.drift * position++) / (4 * blocks) +
            wander +
            gaussian(random) * spread;
          trials[arm].push(Math.exp(log));
        }
        run.push(trials);
      }
      return run;
    }

    for (const [name, noise] of Object.entries(NOISES)) {
      for (const blocks of [2, 3, 5, 8]) {
        for (const ratio of [1, 1.3]) {
          it(`covers the true ratio ${ratio} at ${blocks} blocks with ${name}`, () => {
            const random = seededRandom(blocks * 100 + ratio * 10 + name.length);
            let covered = 0;
            for (let run = 0; run < RUNS; run++) {
              const interval = blockedRatioInterval(simulatedRun(blocks, ratio, noise, random));
              if (interval.low <= ratio && ratio <= interval.high) covered++;
            }
            expect(covered / RUNS).toBeGreaterThanOrEqual(0.93);
          });
        }
      }
    }
  });

  it("measures the coefficient of variation", () => {
    expect(cv([1, 1, 1])).toBe(0);
    expect(cv([1, 3])).toBeCloseTo(Math.SQRT2 / 2, 6);
  });
});
