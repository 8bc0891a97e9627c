import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { layOutForTile } from "../../tensor/row-quads.js";
import { shareArray, type Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";

const rng = new Rng(23);

/** The same f32 values as a row-major weight and as one in row quads (tensor/row-quads.ts). */
function twoLayouts(rows: number, cols: number): [Weight, Weight] {
  const values = rng.fillNormal(new Float32Array(rows * cols), 0.5);
  const data = shareArray(values);
  if (!layOutForTile(data, rows, cols)) throw new Error("this runtime has no shared WebAssembly memory");
  return [
    { dtype: "f32", rows, cols, data: shareArray(values) },
    { dtype: "f32", rows, cols, data, layout: "row-quads" },
  ];
}

const pools: MatmulPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});
/** The plain kernel, the fused tile and the unfused one, each on one thread and on two. */
const kinds = [
  ["plain", { simd: false }],
  ["fused tile", { simd: true, fma: true }],
  ["unfused tile", { simd: true, fma: false }],
] as const;
const arms = kinds.flatMap(([name, options]) =>
  [1, 2].map((threads) => {
    const pool = new MatmulPool(threads, options);
    pools.push(pool);
    return { label: `${name}, ${threads} thread${threads > 1 ? "s" : ""}`, pool };
  }),
);

describe("the matmul over f32 weights in row quads", () => {
  for (const { label, pool } of arms) {
    it(`${label}: gives the row-major weight's bits at any batch, ragged rows included`, () => {
      const K = 96;
      // 1030 and 1036 rows end in a unit of one and of three groups (the tile's loops take two
      // groups at a time, a last one alone), then ragged rows. From M = 12 the tile k-blocks its
      // first eight pairs (13: six and a row left; 40: eight, then twelve more).
      for (const N of [1030, 1036, 1024]) {
        const [rowMajor, quads] = twoLayouts(N, K);
        for (const M of [1, 2, 3, 13, 16, 40]) {
          const x = rng.fillNormal(new Float32Array(M * K), 1);
          const a = new Float32Array(M * N);
          const b = new Float32Array(M * N);
          pool.matmul(x, M, rowMajor, a);
          pool.matmul(x, M, quads, b);
          expect(Array.from(b)).toEqual(Array.from(a));
        }
      }
    });

    it(`${label}: gives those bits where a dispatch's row chunks start off the weight's groups of four`, () => {
      // After a first weight of 6 rows, the second weight's chunks start at rows 2 mod 4.
      const K = 64;
      const [firstRowMajor, firstQuads] = twoLayouts(6, K);
      const [rowMajor, quads] = twoLayouts(514, K);
      const M = 3;
      const x = rng.fillNormal(new Float32Array(M * K), 1);
      const outs = () => [new Float32Array(M * 6), new Float32Array(M * 514)];
      const a = outs();
      const b = outs();
      pool.matmulMany(x, M, [firstRowMajor, rowMajor], a);
      pool.matmulMany(x, M, [firstQuads, quads], b);
      expect(b.map((o) => Array.from(o))).toEqual(a.map((o) => Array.from(o)));
    });
  }
});
