/**
 * The `fp8=scaled` path (matmul/fp8-rows.wat's scaleInput and its `.scaled` builds, fp8Step): at
 * one input row an FP8 weight with 128x128 tile scales is dotted with the input times each band's
 * scales, no multiply by a scale per weight. Its error, stated and held here: each output within
 * (K + 1)·2^-24·Σ_k |x_k·w_k| of the f64 sum (the exact path's K·2^-24 bound plus one rounding of
 * each scaled input value), while no |x·scale| reaches 2^64 (the scaled input would overflow) and
 * products below 2^-70 in magnitude are subnormal (they add less than 2^-70 each). With
 * power-of-two scales (FP8 converted from MXFP4, DeepSeek-V4's E8M0 scales) only its order of sums
 * departs from the exact path's: each block's two halves are summed apart, then added.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import type { Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";
import { matmulReference, weightAt } from "../reference.js";
import { fp8Weight } from "./fp8-fixture.js";

const rng = new Rng(28);
const pools: MatmulPool[] = [];
function pool(threads: number, fp8: "exact" | "scaled"): MatmulPool {
  const p = new MatmulPool(threads, { simd: true, fp8 });
  pools.push(p);
  return p;
}
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

const bitsOf = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

/**
 * An FP8 weight [N, K] of finite random codes (zero at the columns k where `zero(k)`), `scale` per
 * blockRows x blockCols block, codes in `order`.
 */
function randomFp8Weight(
  N: number,
  K: number,
  scale: (i: number) => number,
  [blockRows, blockCols]: readonly [number, number],
  order: "file" | "lanes" | "quads",
  zero: (k: number) => boolean = () => false,
): Weight {
  const codes = new Uint8Array(N * K);
  for (let i = 0; i < codes.length; i++)
    codes[i] = zero(i % K) ? 0 : (rng.nextU32() % 0x7f) | (rng.nextU32() % 2 ? 0x80 : 0);
  const blocks = Math.ceil(N / blockRows) * Math.ceil(K / blockCols);
  return fp8Weight(
    codes,
    N,
    K,
    Float32Array.from({ length: blocks }, (_, i) => scale(i)),
    blockRows,
    blockCols,
    order,
  );
}

/** The stated bound: (K + 1)·2^-24·Σ_k |x_k·w_k| for output n of input row m. */
function scaledBound(x: Float32Array, m: number, w: Weight, n: number): number {
  const K = w.cols;
  let magnitude = 0;
  for (let k = 0; k < K; k++) magnitude += Math.abs((x[m * K + k] as number) * weightAt(w, n, k));
  return (K + 1) * 2 ** -24 * magnitude;
}

const ORDERS = ["file", "lanes", "quads"] as const;
/** Scales as real checkpoints have them (absmax / 448: not powers of two), across a wide range. */
const REAL_SCALE = (i: number) => (0.5 + ((i * 0.37) % 1)) * 2 ** ((i % 11) - 14);

describe("fp8=scaled (input times each 128x128 tile's scale)", () => {
  it.each(ORDERS)(
    "stays within (K + 1)·2^-24·Σ|x·w| of the f64 sum, on one thread and two, codes in %s order",
    (order) => {
      const [N, K] = [order === "quads" ? 388 : 390, 640]; // three bands and a ragged one, five scale columns
      const w = randomFp8Weight(N, K, REAL_SCALE, [128, 128], order);
      const x = rng.fillNormal(new Float32Array(K), 1);
      const want = new Float32Array(N);
      matmulReference(x, 1, w, want);
      const exact = new Float32Array(N);
      pool(1, "exact").matmul(x, 1, w, exact);
      let worst = 0;
      for (const p of [pool(1, "scaled"), pool(2, "scaled")]) {
        expect(p.fp8).toBe("scaled");
        const got = new Float32Array(N);
        p.matmul(x, 1, w, got);
        for (let n = 0; n < N; n++) {
          const delta = Math.abs((got[n] as number) - (want[n] as number));
          expect(delta).toBeLessThanOrEqual(scaledBound(x, 0, w, n));
          worst = Math.max(worst, delta / scaledBound(x, 0, w, n));
        }
        // Not the exact path's bits where the scales are not powers of two.
        expect(bitsOf(got)).not.toEqual(bitsOf(exact));
      }
      expect(worst).toBeGreaterThan(0);
    },
  );

  it("takes a weight narrower than a tile as one band", () => {
    const [N, K] = [96, 320]; // one row of scales, as a 128x128 grid over 96 rows gives
    const w = randomFp8Weight(N, K, REAL_SCALE, [96, 128], "quads");
    const x = rng.fillNormal(new Float32Array(K), 1);
    const [want, got, exact] = [new Float32Array(N), new Float32Array(N), new Float32Array(N)];
    matmulReference(x, 1, w, want);
    pool(1, "scaled").matmul(x, 1, w, got);
    pool(1, "exact").matmul(x, 1, w, exact);
    for (let n = 0; n < N; n++)
      expect(Math.abs((got[n] as number) - (want[n] as number))).toBeLessThanOrEqual(scaledBound(x, 0, w, n));
    expect(bitsOf(got)).not.toEqual(bitsOf(exact));
  });

  // With power-of-two scales (DeepSeek-V4's E8M0 ones) each scaled input is exact, so the one
  // departure from the exact path is the order of sums: each block's second 16 values summed apart
  // from its first 16 (eight chains of multiply-adds, not four), the two added at the end.
  it.each(ORDERS)(
    "with power-of-two scales departs from the exact path only by summing each block's halves apart, codes in %s order",
    (order) => {
      const [N, K] = [256, 384];
      const twoPowers = (i: number) => 2 ** ((i % 13) - 16);
      const x = rng.fillNormal(new Float32Array(K), 1);
      const run = (w: Weight, fp8: "exact" | "scaled", threads: number) => {
        const out = new Float32Array(N);
        pool(threads, fp8).matmul(x, 1, w, out);
        return out;
      };
      // Every block's second half zero: that sum stays zero, and the bits are the exact path's.
      const firstHalves = randomFp8Weight(N, K, twoPowers, [128, 128], order, (k) => k % 32 >= 16);
      expect(bitsOf(run(firstHalves, "scaled", 2))).toEqual(bitsOf(run(firstHalves, "exact", 1)));
      // Whole blocks: other bits, within the stated bound.
      const whole = randomFp8Weight(N, K, twoPowers, [128, 128], order);
      const [want, got] = [new Float32Array(N), run(whole, "scaled", 2)];
      matmulReference(x, 1, whole, want);
      for (let n = 0; n < N; n++)
        expect(Math.abs((got[n] as number) - (want[n] as number))).toBeLessThanOrEqual(
          scaledBound(x, 0, whole, n),
        );
      expect(bitsOf(got)).not.toEqual(bitsOf(run(whole, "exact", 1)));
    },
  );

  it("leaves other scale blocks, and more input rows than one, on the exact path's bits", () => {
    const [N, K] = [200, 256];
    for (const [blocks, M] of [
      [[1, 32], 1],
      [[128, 128], 2],
    ] as const) {
      const w = randomFp8Weight(N, K, REAL_SCALE, blocks, "quads");
      const x = rng.fillNormal(new Float32Array(M * K), 1);
      const [want, got] = [new Float32Array(M * N), new Float32Array(M * N)];
      pool(1, "exact").matmul(x, M, w, want);
      pool(1, "scaled").matmul(x, M, w, got);
      expect(bitsOf(got)).toEqual(bitsOf(want));
    }
  });
});
