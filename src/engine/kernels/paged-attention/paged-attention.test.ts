import { afterAll, describe, expect, it } from "vitest";
import { BlockPlacement } from "../../cache/placement.js";
import { PagedKv } from "../../cache/storage.js";
import { Rng } from "../../tensor/random.js";
import { MatmulPool } from "../pool.js";
import { AttentionScratch, pagedAttention } from "./paged-attention.js";

const pool = new MatmulPool(2);
afterAll(() => pool.close());

describe("scalar reference attention over a window kept as a ring", () => {
  it("equals the sliding-window softmax with a sink written out by hand, and the fast kernel", () => {
    const rng = new Rng(17);
    const [numHeads, numKvHeads, headDim, vHeadDim, blockSize, window] = [4, 2, 8, 4, 4, 7];
    const spec = new BlockPlacement(blockSize, window, true);
    const cache = new PagedKv(spec, 0, 16, numKvHeads, headDim, vHeadDim);
    const table = [11, 3, 8, 14];
    expect(spec.ringBlocks).toBe(table.length);
    // 40 positions written in order through the ring; the last ones overwrite the first laps.
    const n = 40;
    const keys = rng.fillNormal(new Float32Array(n * numKvHeads * headDim), 1);
    const values = rng.fillNormal(new Float32Array(n * numKvHeads * vHeadDim), 1);
    for (let p = 0; p < n; p++)
      cache.write(
        cache.placement.slot(table, p),
        keys,
        p * numKvHeads * headDim,
        values,
        p * numKvHeads * vHeadDim,
      );
    const sinks = new Float32Array([0.5, -1, 2, 0]);
    const scale = 1 / Math.sqrt(headDim);
    // Queries at the last positions of one chunk (the ring holds window + chunk - 1 of them).
    const positions = [33, 36, 39];
    const q = rng.fillNormal(new Float32Array(positions.length * numHeads * headDim), 1);
    const ref = new Float32Array(positions.length * numHeads * vHeadDim);
    const scratch = new AttentionScratch();
    positions.forEach((pos, t) => {
      pagedAttention(
        {
          q,
          qOffset: t * numHeads * headDim,
          blocks: table,
          pos,
          out: ref,
          outOffset: t * numHeads * vHeadDim,
        },
        cache,
        { numHeads, scale, sinks },
        scratch,
      );
    });
    positions.forEach((pos, t) => {
      for (let h = 0; h < numHeads; h++) {
        const kvh = Math.floor(h / (numHeads / numKvHeads));
        // weight_i = exp(s_i) / (sum_j exp(s_j) + exp(sink)) over pos - window + 1 .. pos.
        const scores: number[] = [];
        for (let p = pos - window + 1; p <= pos; p++) {
          let s = 0;
          for (let d = 0; d < headDim; d++)
            s +=
              (q[(t * numHeads + h) * headDim + d] as number) *
              (keys[(p * numKvHeads + kvh) * headDim + d] as number);
          scores.push(s * scale);
        }
        const denominator = scores.reduce((a, s) => a + Math.exp(s), 0) + Math.exp(sinks[h] as number);
        for (let d = 0; d < vHeadDim; d++) {
          let expected = 0;
          scores.forEach((s, i) => {
            const p = pos - window + 1 + i;
            expected +=
              (Math.exp(s) / denominator) * (values[(p * numKvHeads + kvh) * vHeadDim + d] as number);
          });
          const got = ref[(t * numHeads + h) * vHeadDim + d] as number;
          expect(Math.abs(got - expected)).toBeLessThanOrEqual(1e-6 * (Math.abs(expected) + 1));
        }
      }
    });
    const meta = new Int32Array(positions.flatMap((pos) => [pos, spec.firstVisible(pos), 0]));
    const out = new Float32Array(ref.length);
    pool.attention({
      meta,
      tables: Int32Array.from(table),
      blockSize,
      ringBlocks: spec.ringBlocks,
      q,
      out,
      keys: cache.keys,
      values: cache.values,
      numHeads,
      numKvHeads,
      headDim,
      vHeadDim,
      scale,
      sinks,
    });
    ref.forEach((r, i) => {
      expect(Math.abs((out[i] as number) - r)).toBeLessThanOrEqual(1e-6 * (Math.abs(r) + 1));
    });
  });
});

describe("scalar reference attention with relative position logits", () => {
  it("equals softmax(q·k·scale + the head's logit of the distance's bucket) written out by hand", () => {
    const rng = new Rng(23);
    const [numHeads, numKvHeads, headDim, blockSize, numBuckets] = [4, 2, 8, 4, 6];
    const cache = new PagedKv(new BlockPlacement(blockSize, 0, false), 0, 16, numKvHeads, headDim, headDim);
    const table = [5, 2, 9, 0, 12, 7];
    const n = 22;
    const keys = rng.fillNormal(new Float32Array(n * numKvHeads * headDim), 1);
    const values = rng.fillNormal(new Float32Array(n * numKvHeads * headDim), 1);
    for (let p = 0; p < n; p++)
      cache.write(
        cache.placement.slot(table, p),
        keys,
        p * numKvHeads * headDim,
        values,
        p * numKvHeads * headDim,
      );
    // Distances 0, 1, 2 a bucket each, 3..4 and 5..7 one each, 8 on the last.
    const buckets = Int32Array.from([0, 1, 2, 3, 3, 4, 4, 4, 5]);
    const logits = rng.fillNormal(new Float32Array(numHeads * numBuckets), 2);
    const scale = 1 / Math.sqrt(headDim);
    const pos = n - 1;
    const q = rng.fillNormal(new Float32Array(numHeads * headDim), 1);
    const out = new Float32Array(numHeads * headDim);
    pagedAttention(
      { q, qOffset: 0, blocks: table, pos, out, outOffset: 0 },
      cache,
      { numHeads, scale, relativeBias: { logits, numBuckets, buckets } },
      new AttentionScratch(),
    );
    for (let h = 0; h < numHeads; h++) {
      const kvh = Math.floor(h / (numHeads / numKvHeads));
      const scores: number[] = [];
      for (let p = 0; p <= pos; p++) {
        let s = 0;
        for (let d = 0; d < headDim; d++)
          s += (q[h * headDim + d] as number) * (keys[(p * numKvHeads + kvh) * headDim + d] as number);
        const bucket = buckets[Math.min(pos - p, buckets.length - 1)] as number;
        scores.push(s * scale + (logits[h * numBuckets + bucket] as number));
      }
      const denominator = scores.reduce((a, s) => a + Math.exp(s), 0);
      for (let d = 0; d < headDim; d++) {
        let expected = 0;
        scores.forEach((s, p) => {
          expected += (Math.exp(s) / denominator) * (values[(p * numKvHeads + kvh) * headDim + d] as number);
        });
        const got = out[h * headDim + d] as number;
        expect(Math.abs(got - expected)).toBeLessThanOrEqual(1e-6 * (Math.abs(expected) + 1));
      }
    }
  });
});
