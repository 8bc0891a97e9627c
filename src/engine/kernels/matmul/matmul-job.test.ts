import { describe, expect, it } from "vitest";
import { splitRows, unitRows } from "./matmul-job.js";

describe("splitRows", () => {
  it("cuts a run into whole units then tail units that cover every row once, in order, in groups of four", () => {
    for (const rows of [4, 60, 64, 128, 200, 1280, 2304, 4100]) {
      for (const tailRows of [0, 64, 128, 256]) {
        const split = splitRows(rows, 64, 16, tailRows);
        let next = 0;
        for (let u = 0; u < split.units; u++) {
          const [r0, r1] = unitRows(split, rows, u);
          expect(r0).toBe(next);
          expect(r1 - r0).toBe(u < split.whole ? 64 : Math.min(16, rows - r0));
          expect(r0 % 4).toBe(0);
          next = r1;
        }
        expect(next, `rows ${rows}, tail ${tailRows}`).toBe(rows);
        // The tail holds about tailRows rows (less where the run is shorter), never a whole unit more.
        const tail = rows - split.whole * 64;
        expect(tail).toBeGreaterThanOrEqual(Math.min(rows, tailRows));
        expect(tail).toBeLessThan(tailRows + 64);
      }
    }
  });
});
