import { afterAll, describe, expect, it } from "vitest";
import { toLanesInPlace } from "../../../formats/fp8-lanes.js";
import { toQuadsInPlace } from "../../../formats/fp8-quads.js";
import { toHalves } from "../../../formats/index.js";
import { Rng } from "../../tensor/random.js";
import { shareArray, type Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";
import { weightAt } from "../reference.js";
import type { KernelSwitches } from "../switches.js";

// The order of the sums on every path that decodes MXFP4 or FP8 weights, matmul/matmul-tile.wat's:
// each output keeps four f32 lane sums over k mod 4 in ascending k, added as (l0 + l1) + (l2 +
// l3). The weights and inputs make every product exact in f32 (E2M1 values have two significant
// bits, E4M3 ones four, scales are powers of two, the inputs have twelve) and every partial sum
// exact in f64, so f32 rounding after each addition is the kernels' arithmetic, fused or not; and
// they make the sums round at almost every step, so another order gives other bits.
const rng = new Rng(28);
const pools: MatmulPool[] = [];
afterAll(() => Promise.all(pools.map((p) => p.close())));

const [N, K] = [29, 96]; // a ragged last group of rows
const codes = Uint8Array.from({ length: (N * K) / 2 }, () => rng.nextU32() & 255);
const exponents = Uint8Array.from({ length: (N * K) / 32 }, () => 122 + (rng.nextU32() % 10));
const ocp: Weight = {
  dtype: "mxfp4",
  rows: N,
  cols: K,
  data: shareArray(codes),
  mxScales: shareArray(exponents),
};
const halves: Weight = { ...ocp, data: shareArray(toHalves(codes)), mxfp4Order: "halves" };
// FP8 codes but NaN's (0x7f, 0xff), scales 2^-4 to 2^4 per block of 2 rows by 32 values.
const fp8: Weight = {
  dtype: "fp8_e4m3",
  rows: N,
  cols: K,
  data: shareArray(
    Uint8Array.from({ length: N * K }, () => (rng.nextU32() % 0x7f) | (rng.nextU32() % 2 ? 0x80 : 0)),
  ),
  scale: {
    data: shareArray(
      Float32Array.from({ length: Math.ceil(N / 2) * (K / 32) }, () => 2 ** ((rng.nextU32() % 9) - 4)),
    ),
    blockRows: 2,
    blockCols: 32,
  },
};
const fp8Lanes: Weight = {
  ...fp8,
  data: shareArray(toLanesInPlace((fp8.data as Uint8Array).slice())),
  fp8Order: "lanes",
};
/** The FP8 weight's first 28 rows (whole groups of four) in quads order. */
const fp8Quads: Weight = {
  ...fp8,
  rows: 28,
  data: shareArray(toQuadsInPlace((fp8.data as Uint8Array).slice(0, 28 * K), K)),
  scale: {
    ...(fp8.scale as NonNullable<Weight["scale"]>),
    data: (fp8.scale as NonNullable<Weight["scale"]>).data.subarray(0, 14 * (K / 32)),
  },
  fp8Order: "quads",
};
/** Inputs ±(1 + j/2048)·2^e, e in [-8, 8]: twelve significant bits. */
const input = (M: number) =>
  Float32Array.from(
    { length: M * K },
    () =>
      (rng.nextU32() % 2 ? -1 : 1) * (1 + (rng.nextU32() % 2048) / 2048) * 2 ** ((rng.nextU32() % 17) - 8),
  );

type Order = "tile" | "descending" | "one chain" | "left to right";

/** Output (m, n) of `w` summed in a given order of k: `lanes` chains over k mod lanes, then combined. */
function summed(w: Weight, x: Float32Array, m: number, n: number, order: Order) {
  const lanes = order === "one chain" ? 1 : 4;
  const sums = new Array<number>(lanes).fill(0);
  const ks = Array.from({ length: K }, (_, k) => (order === "descending" ? K - 1 - k : k));
  for (const k of ks)
    sums[k % lanes] = Math.fround((sums[k % lanes] as number) + (x[m * K + k] as number) * weightAt(w, n, k));
  const [l0, l1, l2, l3] = sums as [number, number, number, number];
  if (order === "one chain") return l0;
  if (order === "left to right") return Math.fround(Math.fround(Math.fround(l0 + l1) + l2) + l3);
  return Math.fround(Math.fround(l0 + l1) + Math.fround(l2 + l3));
}

const bitsOf = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe("the MXFP4 and FP8 matmuls' order of sums", () => {
  it("is the tile's on every path, decoding into the multiply-adds or into scratch, and no other order gives its bits", () => {
    const paths: [string, Partial<KernelSwitches>][] = [
      ["into the multiply-adds (default at one row)", { mxfp4: "fused" }],
      [
        "into the multiply-adds at every batch",
        { mxfp4: "fused", mxfp4ScratchTokens: Number.POSITIVE_INFINITY },
      ],
      ["into scratch for the tile", { mxfp4: "fused", mxfp4ScratchTokens: 1 }],
      ["unfused", { mxfp4: "fused", fma: false }],
      ["unpacked", { mxfp4: "unpacked" }],
    ];
    const made = paths.flatMap(([name, switches]) =>
      [1, 2].map((threads) => {
        const pool = new MatmulPool(threads, { simd: true, ...switches });
        pools.push(pool);
        return { name, threads, pool };
      }),
    );
    for (const M of [1, 3]) {
      const x = input(M);
      const want = (w: Weight, order: Order) =>
        bitsOf(
          Float32Array.from({ length: M * w.rows }, (_, i) =>
            summed(w, x, Math.floor(i / w.rows), i % w.rows, order),
          ),
        );
      for (const w of [ocp, halves, fp8, fp8Lanes, fp8Quads]) {
        const tile = want(w, "tile");
        // The weights can tell the orders apart: any other one changes some output.
        for (const other of ["descending", "one chain", "left to right"] as const)
          expect(want(w, other)).not.toEqual(tile);
        const weight =
          w === fp8
            ? "fp8"
            : w === fp8Lanes
              ? "fp8 in lanes order"
              : w === fp8Quads
                ? "fp8 in quads order"
                : w === halves
                  ? "mxfp4 in halves order"
                  : "mxfp4";
        for (const { name, threads, pool } of made) {
          const out = new Float32Array(M * w.rows);
          pool.matmul(x, M, w, out);
          expect({ name, M, threads, weight, bits: bitsOf(out) }).toEqual({
            name,
            M,
            threads,
            weight,
            bits: tile,
          });
        }
      }
    }
  });
});
