import { afterAll, describe, expect, it } from "vitest";
import { decodeTable, FP8_E4M3FN } from "../../../formats/index.js";
import { BlockPlacement } from "../../cache/placement.js";
import { PagedRows } from "../../cache/storage.js";
import { MatmulPool } from "../../kernels/pool.js";
import { Rope } from "../../kernels/rope.js";
import { Rng } from "../../tensor/random.js";
import { f32Weight } from "../../tensor/weight.js";
import { DsaIndexer, type DsaSpec, dsaNames, hadamardFp8, topKPositions } from "./dsa-indexer.js";
import { MlaAttention } from "./mla-attention.js";
import {
  MLA_TEST_HIDDEN as H,
  MLA_TEST_SPEC,
  type MlaMatrices,
  mlaBlock,
  randomMla,
  referenceRope,
  runLayers,
  runSequence,
  TEST_YARN,
  TEST_YARN_SCALING,
} from "./mla-fixture.js";
import { SharedTopK } from "./shared-top-k.js";

const pool = new MatmulPool(2);
afterAll(() => pool.close());

const SPEC: DsaSpec = {
  numHeads: 4,
  headDim: 16,
  ropeDim: 6,
  ropeTheta: 10_000,
  ropeInterleave: false,
  fp8Scale: "amax",
  topK: 8,
};
const Q_LATENT = 12;

function randomIndexer(seed: number, spec: DsaSpec = SPEC): DsaIndexer {
  const rng = new Rng(seed);
  const { numHeads: n, headDim: d } = spec;
  const m = (rows: number, cols: number) =>
    f32Weight(rows, cols, rng.fillNormal(new Float32Array(rows * cols), 1 / Math.sqrt(cols)));
  return new DsaIndexer(
    spec,
    m(n * d, Q_LATENT),
    m(d, H),
    Float32Array.from({ length: d }, () => 1 + 0.1 * rng.normal()),
    rng.fillNormal(new Float32Array(d), 0.1),
    m(n, H),
    dsaNames("model.layers.0"),
  );
}

/** Every token's selection over one sequence of n tokens, with the indexer's scores from its cache. */
function selections(indexer: DsaIndexer, h: Float32Array, qLatent: Float32Array, n: number, mode: string) {
  const switches = new Map([["dsa_indexer", mode]]);
  const positions = Array.from({ length: n }, (_, i) => i);
  const placement = new BlockPlacement(4, 0, false);
  const cache = new PagedRows(placement, 0, placement.blocksNeeded(n), indexer.spec.headDim);
  const table = Array.from({ length: placement.blocksNeeded(n) }, (_, b) => b);
  const keys = indexer.keys(h, n, positions, pool, switches);
  for (let p = 0; p < n; p++) cache.write(placement.slot(table, p), keys, p * indexer.spec.headDim);
  const chosen = indexer.select(h, qLatent, n, positions, cache, () => table, pool, switches) as Int32Array[];
  return { chosen, keys };
}

/** The orthonormal Hadamard transform of `x` (Sylvester order, scaled by its length^-1/2), in float64. */
function hadamard(x: ArrayLike<number>): Float64Array {
  const out = Float64Array.from(x);
  const d = out.length;
  for (let len = 1; len < d; len *= 2)
    for (let i = 0; i < d; i += 2 * len)
      for (let j = i; j < i + len; j++) {
        const [a, b] = [out[j] as number, out[j + len] as number];
        out[j] = a + b;
        out[j + len] = a - b;
      }
  return out.map((v) => v / Math.sqrt(d));
}

describe("DeepSeek sparse attention's indexer", () => {
  const n = 96;
  const rng = new Rng(11);
  const h = rng.fillNormal(new Float32Array(n * H), 1);
  const qLatent = rng.fillNormal(new Float32Array(n * Q_LATENT), 1);
  const indexer = randomIndexer(3);

  it("exact mode picks the top-k of Σ_h w_h·ReLU(q_h·k_s) over the causal prefix, every position while they fit", () => {
    const { chosen, keys } = selections(indexer, h, qLatent, n, "exact");
    const { numHeads: nh, headDim: d, topK } = SPEC;
    // The indexer's queries and weights recomputed from its weights: RoPE pairs i with i + ropeDim/2.
    const q = new Float32Array(n * nh * d);
    pool.matmul(qLatent, n, indexer.qB, q);
    const rope = new Rope(d, SPEC.ropeDim / d, SPEC.ropeTheta);
    for (let t = 0; t < n; t++) rope.apply(q, t * nh * d, nh, d, t);
    const w = new Float32Array(n * nh);
    pool.matmul(h, n, indexer.weightsProj, w);
    for (let t = 0; t < n; t++) {
      if (t < topK) {
        expect(Array.from(chosen[t] as Int32Array)).toEqual(Array.from({ length: t + 1 }, (_, p) => p));
        continue;
      }
      const scores = Float64Array.from({ length: t + 1 }, (_, s) => {
        let score = 0;
        for (let head = 0; head < nh; head++) {
          let dot = 0;
          for (let i = 0; i < d; i++)
            dot += (q[(t * nh + head) * d + i] as number) * (keys[s * d + i] as number);
          score += ((w[t * nh + head] as number) / Math.sqrt(nh * d)) * Math.max(0, dot);
        }
        return score;
      });
      const expected = Array.from({ length: t + 1 }, (_, s) => s)
        .sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b)
        .slice(0, topK)
        .sort((a, b) => a - b);
      expect(Array.from(chosen[t] as Int32Array)).toEqual(expected);
    }
  });

  it.each([
    [false, "i with i + ropeDim/2 (DeepSeek-V3.2-Exp)"],
    [true, "adjacent 2i, 2i+1 (GLM-5's indexer_rope_interleave)"],
  ])("with ropeInterleave %s the indexer key's RoPE pairs %s", (ropeInterleave) => {
    // vLLM's DeepseekV32 indexer: is_neox_style = not indexer_rope_interleave; neox rotates
    // (x_i, x_{i+R/2}), GPT-J style (x_2i, x_2i+1), both by the angle pos * theta^(-2i/R).
    const spec = { ...SPEC, ropeInterleave };
    const at = (pos: number) =>
      randomIndexer(3, spec).keys(h, 1, [pos], pool, new Map([["dsa_indexer", "exact"]]));
    const unrotated = at(0);
    const pos = 37;
    const { ropeDim: R, headDim: d } = spec;
    const expected = Float64Array.from(unrotated);
    for (let i = 0; i < R / 2; i++) {
      const [a, b] = ropeInterleave ? [2 * i, 2 * i + 1] : [i, i + R / 2];
      const angle = pos * SPEC.ropeTheta ** ((-2 * i) / R);
      const [x, y] = [unrotated[a] as number, unrotated[b] as number];
      expected[a] = x * Math.cos(angle) - y * Math.sin(angle);
      expected[b] = y * Math.cos(angle) + x * Math.sin(angle);
    }
    const rotated = at(pos);
    for (let i = 0; i < d; i++) expect(rotated[i]).toBeCloseTo(expected[i] as number, 5);
  });

  it("rotates its keys with MLA's YaRN frequencies and cos/sin factor (DeepSeek-V3.2 shares one freqs_cis)", () => {
    const yarn = TEST_YARN;
    const spec: DsaSpec = { ...SPEC, ropeScaling: TEST_YARN_SCALING };
    const { ropeDim: R } = spec;
    const { invFreq, attentionFactor } = referenceRope({ theta: SPEC.ropeTheta, yarn }, R);
    const exact = new Map([["dsa_indexer", "exact"]]);
    // The key before RoPE: position 0 of an indexer without YaRN (angle 0, factor 1).
    const raw = randomIndexer(3, SPEC).keys(h, 1, [0], pool, exact);
    const pos = 37;
    const rotated = randomIndexer(3, spec).keys(h, 1, [pos], pool, exact);
    for (let i = 0; i < R / 2; i++) {
      const angle = pos * (invFreq[i] as number);
      const [x, y] = [raw[i] as number, raw[i + R / 2] as number];
      expect(rotated[i]).toBeCloseTo((x * Math.cos(angle) - y * Math.sin(angle)) * attentionFactor, 5);
      expect(rotated[i + R / 2]).toBeCloseTo(
        (y * Math.cos(angle) + x * Math.sin(angle)) * attentionFactor,
        5,
      );
    }
    expect(Array.from(rotated.subarray(R))).toEqual(Array.from(raw.subarray(R)));
    expect(attentionFactor).not.toBeCloseTo(1, 2);
  });

  it("the FP8 mode (Hadamard, E4M3 per 128 values) chooses differently only near the k-th exact score", () => {
    const exact = selections(indexer, h, qLatent, n, "exact").chosen;
    const fp8 = selections(indexer, h, qLatent, n, "fp8").chosen;
    const differing = exact.flatMap((e, t) =>
      Array.from(e).join() === Array.from(fp8[t] as Int32Array).join() ? [] : [t],
    );
    // On these inputs quantization swaps tokens for some queries but keeps most choices.
    expect(differing.length).toBeGreaterThan(0);
    expect(differing.length).toBeLessThan(n / 2);
    for (const t of differing) {
      const inExact = new Set(exact[t]);
      const inFp8 = new Set(fp8[t]);
      const swapped = [...inExact].filter((s) => !inFp8.has(s)).length;
      // A handful of tokens at the boundary trade places, never the whole selection.
      expect(swapped).toBeGreaterThan(0);
      expect(swapped).toBeLessThanOrEqual(SPEC.topK / 2);
    }
  });

  it("scale_fmt ue8m0 puts every 128-value block on a power-of-two grid, 2^ceil(log2(amax / 448)), unlike amax / 448", () => {
    // DeepSeek-V3.2-Exp inference/kernel.py act_quant: round_scale (scale_fmt set) rounds the scale up to 2^k.
    const d = 256;
    const a = new Rng(5).fillNormal(new Float32Array(d), 1);
    const exact = hadamard(a);
    const e4m3 = new Set(decodeTable(FP8_E4M3FN));
    const onGrid = (format: "amax" | "ue8m0") => {
      const q = Float32Array.from(a);
      hadamardFp8(q, 1, d, format);
      return [0, 128].map((b) => {
        const amax = Math.max(...exact.subarray(b, b + 128).map(Math.abs));
        const scale = 2 ** Math.ceil(Math.log2(amax / 448));
        return Array.from(q.subarray(b, b + 128)).every((v) => e4m3.has(v / scale));
      });
    };
    expect(onGrid("ue8m0")).toEqual([true, true]);
    expect(onGrid("amax")).toEqual([false, false]);
  });

  it("the Hadamard transform keeps dot products, and FP8 per 128 values rounds each value within 2^-4 of its block's scale", () => {
    const d = 256;
    const a = new Rng(2).fillNormal(new Float32Array(d), 1);
    const rotated = Float32Array.from(a);
    hadamardFp8(rotated, 1, d, "amax");
    // Undo the rotation (the orthonormal Hadamard is its own inverse) without quantizing again.
    const back = hadamard(rotated);
    const amax = Math.max(...a.map(Math.abs));
    for (let i = 0; i < d; i++) {
      const restored = back[i] as number;
      // Two blocks of 128, each value's error at most half an E4M3 step (2^-4 relative) of its block max.
      expect(Math.abs(restored - (a[i] as number))).toBeLessThan(amax * 2 ** -4);
    }
    expect(Array.from(topKPositions(Float64Array.from([3, 1, 3, 2, 5]), 3))).toEqual([0, 2, 4]);
  });

  it("top-k selection equals a stable sort by score, best first, ties to the earlier position", () => {
    const rng = new Rng(8);
    for (const [n, k, levels] of [
      [300, 17, 5],
      [64, 64, 3],
      [50, 80, 4],
      [1000, 128, 0],
      [9, 1, 2],
    ] as const) {
      // Few distinct levels make many ties; levels 0 draws continuous scores, ascending ones too.
      const scores = Float64Array.from({ length: n }, (_, s) =>
        levels > 0 ? Math.floor(rng.next() * levels) : s % 7 === 0 ? s : rng.normal(),
      );
      const sorted = Array.from({ length: n }, (_, s) => s).sort(
        (a, b) => (scores[b] as number) - (scores[a] as number) || a - b,
      );
      const expected = sorted.slice(0, k).sort((a, b) => a - b);
      expect(Array.from(topKPositions(scores, k))).toEqual(expected);
    }
  });

  it("restricts latent attention to the chosen tokens: equal to dense MLA while every token fits in top-k", () => {
    const m = randomMla(5);
    const sizes = { ...SPEC, ropeDim: MLA_TEST_SPEC.qkRopeHeadDim };
    const withTopK = (topK: number) => {
      const dense = mlaBlock(m);
      return new MlaAttention(
        dense.spec,
        dense.weights,
        dense.names,
        H,
        1e-6,
        randomIndexer(3, { ...sizes, topK }),
      );
    };
    const x = new Rng(6).fillNormal(new Float32Array(40 * H), 1);
    const run = (block: MlaAttention, attention: string) =>
      runSequence(block, x, [30, ...Array(10).fill(1)], pool, new Map([["dsa_attention", attention]])).out;
    const plain = runSequence(mlaBlock(m), x, [30, ...Array(10).fill(1)], pool, new Map()).out;
    expect(run(withTopK(40), "sparse")).toEqual(plain);
    expect(run(withTopK(8), "dense")).toEqual(plain);
    const sparse = run(withTopK(8), "sparse");
    // The first 8 tokens see everything either way; later ones see 8 of their prefix.
    expect(sparse.subarray(0, 8 * H)).toEqual(plain.subarray(0, 8 * H));
    expect(sparse.subarray(8 * H)).not.toEqual(plain.subarray(8 * H));
    // Per-head K/V has no row for the indexer's key: refused, naming the switch's way out.
    expect(() => withTopK(8).states(new Map([["mla_cache", "per-head"]]))).toThrow(
      /mla_cache=per-head does not combine with DSA's indexer/,
    );
  });

  it("a shared layer (GLM's indexer_types) attends the top-k the full layer before it chose, as HF's skip_topk", () => {
    const sizes = { ...SPEC, ropeDim: MLA_TEST_SPEC.qkRopeHeadDim, topK: 8 };
    const full = randomMla(5);
    // Layer b shares a's query latent, so a's indexer run in b would choose what a chose.
    const b: MlaMatrices = { ...randomMla(9), qA: full.qA, qANorm: full.qANorm };
    const indexer = randomIndexer(3, sizes);
    const layer = (m: MlaMatrices, own?: DsaIndexer, shared?: SharedTopK) => {
      const d = mlaBlock(m);
      return new MlaAttention(d.spec, d.weights, d.names, H, 1e-6, own, shared);
    };
    const x = new Rng(6).fillNormal(new Float32Array(40 * H), 1);
    const chunks = [30, ...Array(10).fill(1)];
    const none = new Map<string, string>();
    const shared = new SharedTopK();
    const [, reused, chained] = runLayers(
      [layer(full, indexer, shared), layer(b, undefined, shared), layer(b, undefined, shared)],
      x,
      chunks,
      pool,
      none,
    );
    const own = runSequence(layer(b, indexer), x, chunks, pool, none).out;
    expect(reused?.out).toEqual(own);
    // A run of shared layers keeps reading the last full layer's choice.
    expect(chained?.out).toEqual(own);
    const dense = runSequence(mlaBlock(b), x, chunks, pool, none).out;
    expect(reused?.out.subarray(8 * H)).not.toEqual(dense.subarray(8 * H));
    // A shared layer keeps no indexer keys, and reads nothing a full layer did not publish this step.
    expect(layer(b, undefined, shared).states(none)).toEqual(mlaBlock(b).states(none));
    expect(() => runSequence(layer(b, undefined, new SharedTopK()), x, chunks, pool, none)).toThrow(
      /a shared-indexer layer reads the top-k of -1 tokens in a step of 30/,
    );
  });
});
