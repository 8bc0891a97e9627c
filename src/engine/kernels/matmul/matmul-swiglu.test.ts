import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { layOutForTile } from "../../tensor/row-quads.js";
import { shareArray, type Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";

const rng = new Rng(31);

/** An f32 weight in row quads (as the engine lays f32 weights out) or row-major. */
function weight(rows: number, cols: number, quads: boolean): Weight {
  const data = shareArray(rng.fillNormal(new Float32Array(rows * cols), 0.5));
  if (quads && !layOutForTile(data, rows, cols)) throw new Error("no shared WebAssembly memory here");
  return { dtype: "f32", rows, cols, data, ...(quads ? { layout: "row-quads" as const } : {}) };
}

const pools: MatmulPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});
function pool(threads: number, simd: boolean): MatmulPool {
  const p = new MatmulPool(threads, { simd });
  pools.push(p);
  return p;
}

/** The two dispatches matmulSwiglu stands for: gate and up in one matmul, then swiglu. */
function separate(p: MatmulPool, x: Float32Array, M: number, gate: Weight, up: Weight): Float32Array {
  const g = new Float32Array(M * gate.rows);
  const u = new Float32Array(M * up.rows);
  p.matmulMany(x, M, [gate, up], [g, u]);
  p.swiglu(g, u, M * gate.rows);
  return g;
}

describe("matmulSwiglu: gate and up matmuls with swiglu in one dispatch", () => {
  // I = 200: three units of 64 rows and a ragged one of 8; I = 130 is no multiple of four and one
  // input row is below the fused dispatch's minimum (the separate dispatches run both); K = 96
  // and 5 or 16 inputs put the split dispatch above the pool's threshold.
  const shapes = [
    { M: 16, K: 96, I: 200 },
    { M: 5, K: 96, I: 200 },
    { M: 1, K: 96, I: 200 },
    { M: 16, K: 96, I: 130 },
  ];
  for (const simd of [true, false]) {
    const one = pool(1, simd);
    const two = pool(2, simd);
    for (const quads of [true, false]) {
      it(`${simd ? "SIMD" : "plain"} kernels, ${quads ? "row quads" : "row-major"}: the separate dispatches' bits on one thread and on two`, () => {
        for (const { M, K, I } of shapes) {
          const gate = weight(I, K, quads);
          const up = weight(I, K, quads);
          const x = rng.fillNormal(new Float32Array(M * K), 1);
          const want = separate(one, x, M, gate, up);
          for (const p of [one, two]) {
            const got = new Float32Array(M * I);
            p.matmulSwiglu(x, M, gate, up, got, new Float32Array(M * I));
            expect(got, `M=${M} K=${K} I=${I}, ${p.threads} threads`).toEqual(want);
          }
          // The fused dispatch is no copy of the separate one: a wrong row pairing would differ.
          expect(want.some((v) => v !== 0)).toBe(true);
        }
      });
    }
  }
});
