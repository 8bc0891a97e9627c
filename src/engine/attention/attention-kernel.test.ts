import { afterAll, describe, expect, it } from "vitest";
import { LayerKvCache } from "../cache/kv-cache.js";
import { FullCacheSpec } from "../cache/spec.js";
import { MatmulPool } from "../kernels/pool.js";
import { Rng } from "../tensor/random.js";
import { AttentionScratch, pagedAttention } from "./paged-attention.js";

const pools = [new MatmulPool(1), new MatmulPool(2)];
afterAll(() => Promise.all(pools.map((p) => p.close())));

describe("attention kernel", () => {
  it("matches the scalar reference within 1e-6, and gives the same bits on one or two threads", () => {
    const rng = new Rng(5);
    const [numHeads, numKvHeads, headDim, vHeadDim, blockSize] = [6, 2, 12, 8, 4];
    const cache = new LayerKvCache(new FullCacheSpec(blockSize), 64, numKvHeads, headDim, vHeadDim);
    rng.fillNormal(cache.keys, 1);
    rng.fillNormal(cache.values, 1);
    // Two sequences in scattered blocks: one at positions 0..39 (a prefill), one decoding at 70.
    const a = [9, 3, 17, 5, 30, 2, 11, 40, 8, 21];
    const b = Array.from({ length: 18 }, (_, i) => 63 - i);
    const tokens = [...Array.from({ length: 40 }, (_, p) => ({ table: a, pos: p })), { table: b, pos: 70 }];
    const T = tokens.length;
    const meta = new Int32Array(3 * T);
    tokens.forEach((t, i) => {
      meta.set([t.pos, 0, t.table === a ? 0 : a.length], 3 * i);
    });
    const q = rng.fillNormal(new Float32Array(T * numHeads * headDim), 1);
    const sinks = rng.fillNormal(new Float32Array(numHeads), 1);
    const outs = pools.map((pool) => {
      const out = new Float32Array(T * numHeads * vHeadDim);
      pool.attention({
        meta,
        tables: Int32Array.from([...a, ...b]),
        blockSize,
        ringBlocks: 0,
        q,
        out,
        keys: cache.keys,
        values: cache.values,
        numHeads,
        numKvHeads,
        headDim,
        vHeadDim,
        scale: 1 / Math.sqrt(headDim),
        sinks,
      });
      return out;
    });
    expect(Array.from(outs[1] as Float32Array)).toEqual(Array.from(outs[0] as Float32Array));
    const ref = new Float32Array(T * numHeads * vHeadDim);
    const scratch = new AttentionScratch();
    tokens.forEach((t, i) => {
      pagedAttention(
        {
          q,
          qOffset: i * numHeads * headDim,
          blocks: t.table,
          pos: t.pos,
          out: ref,
          outOffset: i * numHeads * vHeadDim,
        },
        cache,
        { numHeads, scale: 1 / Math.sqrt(headDim), sinks },
        scratch,
      );
    });
    ref.forEach((r, i) => {
      expect(Math.abs(((outs[0] as Float32Array)[i] as number) - r)).toBeLessThanOrEqual(
        1e-6 * (Math.abs(r) + 1),
      );
    });
  });
});
