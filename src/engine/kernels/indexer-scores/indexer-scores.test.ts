import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { MatmulPool } from "../pool.js";
import { indexerScores } from "./indexer-scores.js";

// The SIMD kernel on one thread and split between two, and the pool without SIMD.
const pools = [new MatmulPool(1), new MatmulPool(2), new MatmulPool(2, { simd: false })];
afterAll(() => Promise.all(pools.map((p) => p.close())));

/** Keys in blocks of 4 slots laid out through a shuffled block table, as a paged cache holds them. */
function paged(rng: Rng, count: number, d: number) {
  const blocks = Math.ceil(count / 4) + 2;
  const keys = rng.fillNormal(new Float32Array(blocks * 4 * d), 1);
  const table = Array.from({ length: blocks }, (_, b) => (b * 3) % blocks);
  const offsets = Int32Array.from({ length: count }, (_, p) => ((table[p >> 2] as number) * 4 + (p % 4)) * d);
  return { keys, offsets };
}

describe("the DSA indexer's scoring kernel", () => {
  it("is available where WebAssembly SIMD is (Node 20 has it)", () => {
    expect(pools[0]?.simd).toBe(true);
  });

  it("gives the plain reference's scores bit for bit: odd head and position counts, zero and negative weights, FP8-like repeats", () => {
    const rng = new Rng(4);
    for (const [heads, d, count] of [
      [4, 32, 1000],
      [3, 16, 37],
      [1, 8, 2],
      [8, 128, 65],
      [2, 4, 1],
      [16, 64, 3000],
    ] as const) {
      const q = rng.fillNormal(new Float32Array(heads * d), 1);
      // Coarse values make exact ties and zero dots likely, where a reordered sum would show.
      if (d === 16) for (let i = 0; i < q.length; i++) q[i] = Math.round((q[i] as number) * 2) / 2;
      const weights = Float64Array.from({ length: heads }, (_, h) => (h === 1 ? 0 : rng.normal() * 0.3));
      const { keys, offsets } = paged(rng, count, d);
      if (d === 16) for (let i = 0; i < keys.length; i++) keys[i] = Math.round(keys[i] as number);
      const plain = new Float64Array(count).fill(7);
      indexerScores(q, weights, d, keys, offsets, count, plain);
      // A prefix of the keys too, as each token of a prefill chunk scores its own.
      const prefix = Math.ceil(count / 2);
      const plainPrefix = new Float64Array(prefix);
      indexerScores(q, weights, d, keys, offsets, prefix, plainPrefix);
      for (const pool of pools) {
        const queries = [count, prefix].map((n) => ({
          q,
          weights,
          count: n,
          scores: new Float64Array(n).fill(7),
        }));
        pool.indexerScores({ keys, offsets, d, queries });
        expect(queries[0]?.scores).toEqual(plain);
        expect(queries[1]?.scores).toEqual(plainPrefix);
      }
      expect(plain.some((s) => s !== 0)).toBe(true);
      // The same bits as each head's dot alone, added in head order.
      const p = count - 1;
      let score = 0;
      for (let h = 0; h < heads; h++) {
        let dot = 0;
        for (let i = 0; i < d; i++)
          dot += (q[h * d + i] as number) * (keys[(offsets[p] as number) + i] as number);
        if (dot > 0) score += (weights[h] as number) * dot;
      }
      expect(plain[p]).toBe(score);
    }
  });
});
