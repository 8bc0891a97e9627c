import { describe, expect, it } from "vitest";
import { arrivalOffsets, runLoad } from "./load.js";

describe("load", () => {
  it("draws seeded Poisson arrivals at the asked mean rate", () => {
    const shape = { requestRate: 10, burstiness: 1, seed: 3 };
    const offsets = arrivalOffsets(2000, shape);
    expect(arrivalOffsets(2000, shape)).toEqual(offsets);
    const meanGap = (offsets.at(-1) ?? 0) / 1999;
    expect(meanGap).toBeGreaterThan(90);
    expect(meanGap).toBeLessThan(110);
    expect(arrivalOffsets(3, { requestRate: Number.POSITIVE_INFINITY, burstiness: 1, seed: 0 })).toEqual([
      0, 0, 0,
    ]);
  });

  it("makes low burstiness burstier (larger spread of gaps) at the same mean", () => {
    const gaps = (k: number) => {
      const o = arrivalOffsets(3000, { requestRate: 10, burstiness: k, seed: 5 });
      return o.slice(1).map((t, i) => t - (o[i] ?? 0));
    };
    const spread = (g: number[]) => {
      const m = g.reduce((a, b) => a + b, 0) / g.length;
      return Math.sqrt(g.reduce((a, b) => a + (b - m) ** 2, 0) / g.length) / m;
    };
    expect(spread(gaps(0.5))).toBeGreaterThan(spread(gaps(1)));
    expect(spread(gaps(1))).toBeGreaterThan(spread(gaps(4)));
  });

  it("keeps within the concurrency cap and hands each send its scheduled time", async () => {
    let inFlight = 0;
    let most = 0;
    const results = await runLoad(
      8,
      { requestRate: Number.POSITIVE_INFINITY, burstiness: 1, maxConcurrency: 3, seed: 0 },
      async (index, scheduledAt) => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((r) => setTimeout(r, 5));
        inFlight--;
        return { index, scheduledAt };
      },
    );
    expect(most).toBe(3);
    expect(results.map((r) => r.index).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Closed loop: each request is timed from when its slot came free, not from time zero.
    expect(new Set(results.map((r) => r.scheduledAt)).size).toBeGreaterThan(1);
  });

  it("times an open loop from the schedule even when the cap makes a request late", async () => {
    const finished: number[] = [];
    const results = await runLoad(
      3,
      { requestRate: 1000, burstiness: 1, maxConcurrency: 1, seed: 0 },
      async (index, scheduledAt) => {
        await new Promise((r) => setTimeout(r, 20));
        finished[index] = performance.now();
        return { index, scheduledAt };
      },
    );
    // Request 2 was due a few ms in, but could only start once request 1 had finished.
    expect(results.find((r) => r.index === 2)?.scheduledAt).toBeLessThan(finished[1] ?? 0);
  });

  it("refuses a bad shape", () => {
    expect(() => arrivalOffsets(1, { requestRate: 0, burstiness: 1, seed: 0 })).toThrow(/rate/);
    expect(() => arrivalOffsets(1, { requestRate: 1, burstiness: 0, seed: 0 })).toThrow(/burstiness/);
  });
});
