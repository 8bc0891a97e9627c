import { planKvCache } from "../../cache/capacity.js";
import { type LayerStorage, layerStorage } from "../../cache/storage.js";
import type { MatmulPool } from "../../kernels/pool.js";
import type { YarnScaling } from "../../kernels/rope.js";
import type { ForwardContext, TokenMixer } from "../../model/model.js";
import { Rng } from "../../tensor/random.js";
import { f32Weight } from "../../tensor/weight.js";
import { MlaAttention, type MlaSpec, mlaNames, mlaShapes } from "./mla-attention.js";

/** Tests' shared setup: a random MLA layer and steps of one sequence over its own paged cache. */

export const MLA_TEST_SPEC: MlaSpec = {
  numHeads: 3,
  qLoraRank: 12,
  kvLoraRank: 16,
  qkNopeHeadDim: 8,
  qkRopeHeadDim: 6,
  vHeadDim: 5,
  ropeTheta: 10_000,
};
export const MLA_TEST_HIDDEN = 20;
export const BLOCK_SIZE = 4;

/** The raw f32 matrices [rows, cols] of a random MLA layer, for the block and a reference alike. */
export interface MlaMatrices {
  readonly qA: Float32Array;
  readonly qANorm: Float32Array;
  readonly qB: Float32Array;
  readonly kvA: Float32Array;
  readonly kvANorm: Float32Array;
  readonly kvB: Float32Array;
  readonly o: Float32Array;
}

export function randomMla(seed: number, spec: MlaSpec = MLA_TEST_SPEC, H = MLA_TEST_HIDDEN): MlaMatrices {
  const rng = new Rng(seed);
  const shape = mlaShapes(spec, H);
  const m = ([rows, cols]: readonly [number, number]) =>
    rng.fillNormal(new Float32Array(rows * cols), 1 / Math.sqrt(cols));
  const norm = (n: number) => Float32Array.from({ length: n }, () => 1 + 0.2 * rng.normal());
  return {
    qA: m(shape.qA),
    qANorm: norm(spec.qLoraRank),
    qB: m(shape.qB),
    kvA: m(shape.kvA),
    kvANorm: norm(spec.kvLoraRank),
    kvB: m(shape.kvB),
    o: m(shape.o),
  };
}

export function mlaBlock(m: MlaMatrices, spec: MlaSpec = MLA_TEST_SPEC, H = MLA_TEST_HIDDEN): MlaAttention {
  const shape = mlaShapes(spec, H);
  return new MlaAttention(
    spec,
    {
      qA: f32Weight(...shape.qA, m.qA),
      qANorm: m.qANorm,
      qB: f32Weight(...shape.qB, m.qB),
      kvA: f32Weight(...shape.kvA, m.kvA),
      kvANorm: m.kvANorm,
      kvB: f32Weight(...shape.kvB, m.kvB),
      o: f32Weight(...shape.o, m.o),
    },
    mlaNames("model.layers.0"),
    H,
    1e-6,
  );
}

/**
 * Runs `block` (any token mixer: MLA here, grouped-query attention in models/gpt-oss.test.ts) over
 * one sequence's hidden states x [n, H] in steps of `chunks` tokens each (their sum n), with the
 * switches given; returns the outputs [n, H] and the layer's storage, planned and allocated as
 * the engine does.
 */
export function runSequence(
  block: TokenMixer,
  x: Float32Array,
  chunks: readonly number[],
  pool: MatmulPool,
  switches: ReadonlyMap<string, string>,
  H = MLA_TEST_HIDDEN,
): { out: Float32Array; storage: LayerStorage } {
  const [run] = runLayers([block], x, chunks, pool, switches, H);
  return run as { out: Float32Array; storage: LayerStorage };
}

/**
 * runSequence for several layers stepped together, as a model runs them: each step runs every
 * layer in order over that step's tokens of x (each layer reads x itself, not its predecessor's
 * output), each layer with its own storage.
 */
export function runLayers(
  layers: readonly TokenMixer[],
  x: Float32Array,
  chunks: readonly number[],
  pool: MatmulPool,
  switches: ReadonlyMap<string, string>,
  H = MLA_TEST_HIDDEN,
): { out: Float32Array; storage: LayerStorage }[] {
  const n = chunks.reduce((a, b) => a + b, 0);
  const plan = planKvCache(
    layers.map((l) => l.states(switches)),
    "full",
    BLOCK_SIZE,
  );
  const blocks = Math.ceil(n / BLOCK_SIZE);
  const runs = layers.map((_, i) => ({
    out: new Float32Array(n * H),
    storage: layerStorage(plan.layers[i] ?? [], [blocks + 2]),
  }));
  // A table that is not the identity, so slots are read through it.
  const table = Array.from({ length: blocks }, (_, b) => blocks + 1 - b);
  let first = 0;
  for (const count of chunks) {
    const positions = Array.from({ length: count }, (_, i) => first + i);
    const ctx: ForwardContext = {
      pool,
      switches,
      batch: {
        tokens: new Int32Array(count),
        positions,
        blockTables: positions.map(() => [table]),
        sequences: [{ first: 0, count, slot: -1 }],
        logitRows: [],
      },
    };
    layers.forEach((layer, i) => {
      const run = runs[i] as (typeof runs)[number];
      run.out.set(layer.forward(x.slice(first * H, (first + count) * H), ctx, run.storage), first * H);
    });
    first += count;
  }
  return runs;
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs((a[i] as number) - (b[i] as number)));
  return d;
}

/** The RoPE a reference applies: its base (none: unrotated), HF YaRN `rope_scaling` keys, pairing. */
export interface ReferenceRope {
  readonly theta: number | null;
  readonly yarn?: {
    readonly factor: number;
    readonly original_max_position_embeddings: number;
    readonly beta_fast: number;
    readonly beta_slow: number;
    readonly mscale: number;
    readonly mscale_all_dim: number;
  };
  /** HF glm_moe_dsa's pairing (x_i with x_{i+dr/2}); else DeepSeek's adjacent pairs. */
  readonly halfSplit?: boolean;
}

/**
 * The rotary inverse frequencies, cos/sin factor and softmax multiplier of `rope` over `dr`
 * features, in f64: HF transformers `modeling_rope_utils.py` `_compute_yarn_parameters`
 * (find_correction_range with truncation, linear_ramp_factor, get_mscale, attention_factor from
 * mscale / mscale_all_dim) and `models/deepseek_v3/modeling_deepseek_v3.py`'s
 * DeepseekV3Attention (scaling *= yarn_get_mscale(factor, mscale_all_dim)^2).
 */
export function referenceRope(rope: ReferenceRope, dr: number) {
  const theta = rope.theta ?? 1;
  const invFreq = Float64Array.from({ length: dr / 2 }, (_, i) => 1 / theta ** ((2 * i) / dr));
  const y = rope.yarn;
  if (y === undefined) return { invFreq, attentionFactor: 1, softmax: 1 };
  const getMscale = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
  const correctionDim = (rotations: number) =>
    (dr * Math.log(y.original_max_position_embeddings / (rotations * 2 * Math.PI))) / (2 * Math.log(theta));
  const low = Math.max(Math.floor(correctionDim(y.beta_fast)), 0);
  const high = Math.min(Math.ceil(correctionDim(y.beta_slow)), dr - 1);
  const ramp = (i: number) => Math.min(1, Math.max(0, (i - low) / (high === low ? 0.001 : high - low)));
  const extrapolation = (i: number) => 1 - ramp(i);
  return {
    invFreq: invFreq.map((f, i) => (f / y.factor) * (1 - extrapolation(i)) + f * extrapolation(i)),
    attentionFactor: getMscale(y.factor, y.mscale) / getMscale(y.factor, y.mscale_all_dim),
    softmax: getMscale(y.factor, y.mscale_all_dim) ** 2,
  };
}

/**
 * YaRN `rope_scaling` keys as Kimi-K2-Instruct's config gives them, over a short original context
 * and with mscale unequal to mscale_all_dim so the cos/sin factor is not 1; TEST_YARN_SCALING is
 * the same as the engine's YarnScaling.
 */
export const TEST_YARN = {
  factor: 32,
  original_max_position_embeddings: 16,
  beta_fast: 1,
  beta_slow: 1,
  mscale: 0.75,
  mscale_all_dim: 1,
} as const;

export const TEST_YARN_SCALING: YarnScaling = {
  factor: TEST_YARN.factor,
  originalMaxPositionEmbeddings: TEST_YARN.original_max_position_embeddings,
  betaFast: TEST_YARN.beta_fast,
  betaSlow: TEST_YARN.beta_slow,
  mscale: TEST_YARN.mscale,
  mscaleAllDim: TEST_YARN.mscale_all_dim,
};
