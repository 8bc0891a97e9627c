import { describe, expect, it } from "vitest";
import { matmulSegments, rowUnits, unitRows } from "./matmul-job.js";

describe("rowUnits", () => {
  const cover = (rows: number, threads: number, M: number) => {
    const job = { rowChunk: 64, ...rowUnits(rows, 64, threads, M) };
    return Array.from({ length: job.units }, (_, u) => unitRows(job, rows, u));
  };

  it("cuts every row into exactly one unit, in order, whole groups of four but a ragged last", () => {
    for (const rows of [4, 60, 64, 100, 128, 768, 1280, 2304, 4096, 4100])
      for (const threads of [1, 2, 4])
        for (const M of [1, 2, 16]) {
          const units = cover(rows, threads, M);
          let next = 0;
          for (const [r0, r1] of units) {
            expect(r0).toBe(next);
            expect(r1).toBeGreaterThan(r0);
            if (r1 < rows) expect((r1 - r0) % 4).toBe(0);
            next = r1;
          }
          expect(next).toBe(rows);
        }
  });

  it("ends a batch's dispatch in quarter units over the last threads' worth of rows", () => {
    const units = cover(768, 2, 16);
    expect(units.slice(0, 10).every(([r0, r1]) => r1 - r0 === 64)).toBe(true);
    expect(units.slice(10)).toHaveLength(8);
    expect(units.slice(10).every(([r0, r1]) => r1 - r0 === 16)).toBe(true);
  });

  it("keeps whole units at one input row", () => {
    expect(cover(768, 2, 1).map(([r0, r1]) => r1 - r0)).toEqual(Array(12).fill(64));
    expect(cover(100, 2, 1)).toEqual([
      [0, 64],
      [64, 100],
    ]);
  });
});

describe("matmulSegments", () => {
  it("lays the outputs one after another in the staged output", () => {
    expect(
      matmulSegments(
        [
          { id: 3, N: 8 },
          { id: 5, N: 4 },
        ],
        2,
        1000,
      ),
    ).toEqual([
      { id: 3, N: 8, rowOffset: 0, outOffset: 1000 },
      { id: 5, N: 4, rowOffset: 8, outOffset: 1064 },
    ]);
    expect(matmulSegments([{ id: 1, N: 4 }], 2, -1)).toEqual([{ id: 1, N: 4, rowOffset: 0, outOffset: -1 }]);
  });
});
