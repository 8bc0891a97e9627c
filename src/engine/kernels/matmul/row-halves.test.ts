import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { layOutForTile } from "../../tensor/row-quads.js";
import { shareArray, type Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";

const rng = new Rng(41);

function quadsWeight(rows: number, cols: number): Weight {
  const data = shareArray(rng.fillNormal(new Float32Array(rows * cols), 0.5));
  if (!layOutForTile(data, rows, cols)) throw new Error("this runtime has no shared WebAssembly memory");
  return { dtype: "f32", rows, cols, data, layout: "row-quads" };
}

const pools: MatmulPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

describe("row-halves: the tile at one input row, read as two streams", () => {
  for (const fma of [true, false]) {
    for (const threads of [1, 2]) {
      const pool = new MatmulPool(threads, { simd: true, fma });
      pools.push(pool);
      it(`${fma ? "fused" : "unfused"}, ${threads} thread(s): one row's outputs are that row's bits in a batch of two`, () => {
        // Chunks of 64 rows: 16 groups (even), and last chunks of 9 groups (odd), 1 group, 1 and a ragged row.
        for (const N of [64, 100, 4, 1030, 1029]) {
          const K = 96;
          const w = quadsWeight(N, K);
          const x = rng.fillNormal(new Float32Array(2 * K), 1);
          const one = new Float32Array(N);
          const two = new Float32Array(2 * N);
          pool.matmul(x, 1, w, one);
          pool.matmul(x, 2, w, two);
          expect(Array.from(one), `N=${N}`).toEqual(Array.from(two.subarray(0, N)));
          expect(one.some((v) => v !== 0)).toBe(true);
        }
      });
    }
  }
});
