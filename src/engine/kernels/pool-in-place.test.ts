import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../tensor/random.js";
import { layOutForTile } from "../tensor/row-quads.js";
import { shareArray, type Weight } from "../tensor/weight.js";
import { MatmulPool } from "./pool.js";

const rng = new Rng(22);

function f32Weight(rows: number, cols: number, quads: boolean): Weight {
  const data = shareArray(rng.fillNormal(new Float32Array(rows * cols), 0.5));
  if (quads && !layOutForTile(data, rows, cols)) throw new Error("no shared WebAssembly memory here");
  return { dtype: "f32", rows, cols, data, ...(quads ? { layout: "row-quads" as const } : {}) };
}

function mxfp4Weight(rows: number, cols: number): Weight {
  return {
    dtype: "mxfp4",
    rows,
    cols,
    data: shareArray(Uint8Array.from({ length: (rows * cols) / 2 }, () => rng.nextU32() & 255)),
    mxScales: shareArray(Uint8Array.from({ length: (rows * cols) / 32 }, () => 120 + (rng.nextU32() % 9))),
  };
}

const pools: MatmulPool[] = [];
afterAll(() => Promise.all(pools.map((p) => p.close())));
function pool(threads: number, mxfp4: "fused" | "int8" = "fused"): MatmulPool {
  const p = new MatmulPool(threads, { mxfp4 });
  pools.push(p);
  return p;
}

/** `a`'s values in an array of the pool's shared memory (where a replayed step's buffers lie). */
function shared(p: MatmulPool, a: Float32Array): Float32Array {
  const placed = p.planMemory(a.byteLength).float32(a.length);
  if (placed === undefined) throw new Error("no shared WebAssembly memory here");
  placed.set(a);
  return placed;
}

const bits = (a: Float32Array) => Array.from(new Uint32Array(a.slice().buffer));

// The pool's split dispatches read an input and write outputs that lie in its shared memory where
// they lie, skipping the staged copies: the same bits as through the copies, whichever of the
// input and outputs lie there. Shapes: 16 and 5 input rows (pairs with and without an odd row),
// and 200 or 130 output rows (a ragged group of four, which goes through the out area).
describe("a split dispatch over arrays in the shared memory", () => {
  const two = pool(2);
  const placements = [
    { x: true, outs: false },
    { x: false, outs: true },
    { x: true, outs: true },
  ];

  for (const quads of [true, false]) {
    it(`matmulMany, ${quads ? "row quads" : "row-major"}: the staged copies' bits`, () => {
      for (const [M, N] of [
        [16, 200],
        [5, 130],
      ] as const) {
        const K = 96;
        const weights = [f32Weight(N, K, quads), f32Weight(64, K, quads)];
        const x = rng.fillNormal(new Float32Array(M * K), 1);
        const want = weights.map((w) => new Float32Array(M * w.rows));
        two.matmulMany(x, M, weights, want);
        expect(want[0]?.some((v) => v !== 0)).toBe(true);
        for (const at of placements) {
          const input = at.x ? shared(two, x) : x;
          const outs = weights.map((w) => {
            const out = new Float32Array(M * w.rows).fill(Number.NaN);
            return at.outs ? shared(two, out) : out;
          });
          two.matmulMany(input, M, weights, outs);
          outs.forEach((out, i) => {
            expect(bits(out), `M=${M} N=${N} ${JSON.stringify(at)}`).toEqual(bits(want[i] as Float32Array));
          });
          expect(bits(input)).toEqual(bits(x));
        }
      }
    });
  }

  it("matmulSwiglu: the staged copies' bits", () => {
    const [M, K, I] = [16, 96, 200];
    const gate = f32Weight(I, K, true);
    const up = f32Weight(I, K, true);
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    const want = new Float32Array(M * I);
    two.matmulSwiglu(x, M, gate, up, want, new Float32Array(M * I));
    for (const at of placements) {
      const input = at.x ? shared(two, x) : x;
      const [g, u] = [0, 1].map(() => {
        const a = new Float32Array(M * I);
        return at.outs ? shared(two, a) : a;
      }) as [Float32Array, Float32Array];
      two.matmulSwiglu(input, M, gate, up, g, u);
      expect(bits(g), JSON.stringify(at)).toEqual(bits(want));
    }
  });

  it("the integer MXFP4 path quantizes an input read where it lies as one staged", () => {
    const int8 = pool(2, "int8");
    const [M, K, N] = [4, 128, 192];
    const w = mxfp4Weight(N, K);
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    const want = new Float32Array(M * N);
    int8.matmul(x, M, w, want);
    expect(want.some((v) => v !== 0)).toBe(true);
    const out = shared(int8, new Float32Array(M * N));
    int8.matmul(shared(int8, x), M, w, out);
    expect(bits(out)).toEqual(bits(want));
  });
});
