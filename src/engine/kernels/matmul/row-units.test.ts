import { describe, expect, it } from "vitest";
import { rowUnits, unitStart } from "./row-units.js";

/** Every unit's [start, end) of `rows`, as the pool's jobs take them. */
function ranges(rows: number, chunk: number, threads: number): [number, number][] {
  const units = rowUnits(rows, chunk, threads);
  return Array.from({ length: units.count }, (_, u) => [
    unitStart(units, u),
    Math.min(rows, unitStart(units, u + 1)),
  ]);
}

describe("rowUnits", () => {
  it("covers every row once, in order, whole chunks first and the last threads' chunks in quarters", () => {
    expect(ranges(1280, 64, 2).map(([a, b]) => b - a)).toEqual([...Array(18).fill(64), ...Array(8).fill(16)]);
    expect(ranges(2996, 64, 2).map(([a, b]) => b - a)).toEqual([
      ...Array(44).fill(64),
      ...Array(11).fill(16),
      4,
    ]);
    for (const [rows, threads] of [
      [1, 1],
      [100, 4],
      [64, 2],
      [2304, 2],
      [4099, 3],
    ] as const) {
      const r = ranges(rows, 64, threads);
      expect(r[0]?.[0]).toBe(0);
      expect(r.at(-1)?.[1]).toBe(rows);
      r.forEach(([a, b], i) => {
        expect(b).toBeGreaterThan(a);
        expect(a % 4).toBe(0);
        if (i > 0) expect(a).toBe(r[i - 1]?.[1]);
      });
      // Past the whole chunks, no unit is longer than a quarter chunk.
      expect(r.filter(([a, b]) => b - a > 16).length).toBe(Math.max(0, Math.floor(rows / 64) - threads));
    }
  });

  it("refuses a chunk that is no multiple of 16", () => {
    expect(() => rowUnits(100, 24, 2)).toThrow(/multiple of 16/);
  });
});
