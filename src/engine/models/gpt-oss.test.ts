import { afterAll, describe, expect, it } from "vitest";
import { type AttentionSpec, attentionNames, GqaAttention } from "../blocks/attention/gqa-attention.js";
import { maxAbsDiff, runSequence } from "../blocks/attention/mla-fixture.js";
import { MatmulPool } from "../kernels/pool.js";
import type { YarnScaling } from "../kernels/rope.js";
import { modelOfFiles } from "../loader/build-model.js";
import { Rng } from "../tensor/random.js";
import { f32Weight } from "../tensor/weight.js";
import { goldenLogprobs } from "../tests/golden-logprobs.js";
import { readCorpus } from "../tiny/corpus.js";
import { minimaxArchitecture, parseMinimaxConfig } from "./minimax-m3.js";

const pool = new MatmulPool(2);
afterAll(() => pool.close());

/** gpt-oss's config.json at tiny sizes, its rope_scaling as released. */
const GPT_OSS = {
  model_type: "gpt_oss",
  vocab_size: 512,
  hidden_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 16,
  layer_types: ["sliding_attention", "full_attention"],
  sliding_window: 4,
  num_local_experts: 4,
  num_experts_per_tok: 2,
  intermediate_size: 32,
  attention_bias: true,
  rope_theta: 150_000,
  rope_scaling: {
    rope_type: "yarn",
    factor: 32,
    beta_fast: 32,
    beta_slow: 1,
    original_max_position_embeddings: 4096,
    truncate: false,
  },
  max_position_embeddings: 131_072,
};
const H = GPT_OSS.hidden_size;

interface Layer {
  readonly q: Float32Array;
  readonly k: Float32Array;
  readonly v: Float32Array;
  readonly o: Float32Array;
  readonly qBias: Float32Array;
  readonly kBias: Float32Array;
  readonly vBias: Float32Array;
  readonly oBias: Float32Array;
  readonly sinks: Float32Array;
}

function randomLayer(seed: number, a: AttentionSpec): Layer {
  const rng = new Rng(seed);
  const m = (rows: number, cols: number) =>
    rng.fillNormal(new Float32Array(rows * cols), 1 / Math.sqrt(cols));
  const b = (n: number) => rng.fillNormal(new Float32Array(n), 0.3);
  const [q, kv] = [a.numHeads * a.headDim, a.numKvHeads * a.headDim];
  return {
    q: m(q, H),
    k: m(kv, H),
    v: m(kv, H),
    o: m(H, q),
    qBias: b(q),
    kBias: b(kv),
    vBias: b(kv),
    oBias: b(H),
    sinks: rng.fillNormal(new Float32Array(a.numHeads), 1),
  };
}

function block(l: Layer, a: AttentionSpec, yarn: YarnScaling | undefined): GqaAttention {
  const [q, kv] = [a.numHeads * a.headDim, a.numKvHeads * a.headDim];
  return new GqaAttention(
    a,
    {
      q: f32Weight(q, H, l.q),
      k: f32Weight(kv, H, l.k),
      v: f32Weight(kv, H, l.v),
      o: f32Weight(H, q, l.o),
      ...(a.bias ? { qBias: l.qBias, kBias: l.kBias, vBias: l.vBias } : {}),
      ...(a.outputBias ? { oBias: l.oBias } : {}),
      ...(a.sinks ? { sinks: l.sinks } : {}),
    },
    attentionNames("model.layers.0"),
    H,
    1e-5,
    yarn,
  );
}

/**
 * One gpt-oss attention layer in f64, as HF transformers defines it: `models/gpt_oss/
 * modeling_gpt_oss.py` (GptOssAttention: q/k/v/o_proj with bias, `_apply_rotary_emb` rotating
 * the first half against the second, eager_attention_forward: scores scaled by head_dim^-1/2, the
 * head's sink logit concatenated to each row before the softmax and dropped after it, a sliding
 * window of `sliding_window` positions including the query's own) and `modeling_rope_utils.py`
 * `_compute_yarn_parameters` (truncate false: the correction range not rounded; attention_factor
 * 0.1 ln(factor) + 1 on cos and sin).
 */
function hfGptOssAttention(l: Layer, x: Float32Array, n: number, window: number | null): Float64Array {
  const { num_attention_heads: nh, num_key_value_heads: nkv, head_dim: d } = GPT_OSS;
  const y = GPT_OSS.rope_scaling;
  const base = GPT_OSS.rope_theta;
  const correctionDim = (rotations: number) =>
    (d * Math.log(y.original_max_position_embeddings / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
  const low = Math.max(correctionDim(y.beta_fast), 0);
  const high = Math.min(correctionDim(y.beta_slow), d - 1);
  const invFreq = Array.from({ length: d / 2 }, (_, i) => {
    const extrapolated = 1 / base ** ((2 * i) / d);
    const extrapolation = 1 - Math.min(1, Math.max(0, (i - low) / (high === low ? 0.001 : high - low)));
    return (extrapolated / y.factor) * (1 - extrapolation) + extrapolated * extrapolation;
  });
  const attentionFactor = 0.1 * Math.log(y.factor) + 1;
  const linear = (w: Float32Array, b: Float32Array, rows: number, cols: number, v: ArrayLike<number>) =>
    Float64Array.from({ length: rows }, (_, r) => {
      let s = b[r] as number;
      for (let c = 0; c < cols; c++) s += (w[r * cols + c] as number) * (v[c] as number);
      return s;
    });
  const rotate = (v: Float64Array, heads: number, pos: number) => {
    for (let h = 0; h < heads; h++)
      for (let i = 0; i < d / 2; i++) {
        const angle = pos * (invFreq[i] as number);
        const [cos, sin] = [Math.cos(angle) * attentionFactor, Math.sin(angle) * attentionFactor];
        const [a, b] = [v[h * d + i] as number, v[h * d + i + d / 2] as number];
        v[h * d + i] = a * cos - b * sin;
        v[h * d + i + d / 2] = b * cos + a * sin;
      }
  };
  const qs: Float64Array[] = [];
  const ks: Float64Array[] = [];
  const vs: Float64Array[] = [];
  for (let t = 0; t < n; t++) {
    const xt = x.subarray(t * H, (t + 1) * H);
    const q = linear(l.q, l.qBias, nh * d, H, xt);
    const k = linear(l.k, l.kBias, nkv * d, H, xt);
    rotate(q, nh, t);
    rotate(k, nkv, t);
    qs.push(q);
    ks.push(k);
    vs.push(linear(l.v, l.vBias, nkv * d, H, xt));
  }
  const out = new Float64Array(n * H);
  for (let t = 0; t < n; t++) {
    const heads = new Float64Array(nh * d);
    for (let h = 0; h < nh; h++) {
      const g = Math.floor(h / (nh / nkv));
      const first = window === null ? 0 : Math.max(0, t - window + 1);
      const logits = [];
      for (let s = first; s <= t; s++) {
        let dot = 0;
        for (let i = 0; i < d; i++) dot += (qs[t]?.[h * d + i] as number) * (ks[s]?.[g * d + i] as number);
        logits.push(dot / Math.sqrt(d));
      }
      const combined = [...logits, l.sinks[h] as number];
      const max = Math.max(...combined);
      const e = combined.map((v) => Math.exp(v - max));
      const sum = e.reduce((a, b) => a + b, 0);
      for (let j = 0; j < d; j++)
        heads[h * d + j] = logits.reduce(
          (acc, _, i) => acc + ((e[i] as number) / sum) * (vs[first + i]?.[g * d + j] as number),
          0,
        );
    }
    out.set(linear(l.o, l.oBias, H, nh * d, heads), t * H);
  }
  return out;
}

describe("gpt-oss's config.json, read as gpt-oss defines it", () => {
  const config = parseMinimaxConfig(GPT_OSS, "gpt-oss");
  const n = 24;
  const x = new Rng(4).fillNormal(new Float32Array(n * H), 1);

  it("puts sinks and an o_proj bias on every layer, sliding and full (MiniMax-M3: sinks on sliding layers only)", () => {
    expect(config.layers.map((a) => [a.kind, a.sinks, a.outputBias])).toEqual([
      ["sliding", true, true],
      ["full", true, true],
    ]);
    const minimax = parseMinimaxConfig({ ...GPT_OSS, model_type: "minimax_m3" }, "minimax");
    expect(minimax.layers.map((a) => [a.sinks, a.outputBias])).toEqual([
      [true, false],
      [false, false],
    ]);
    expect(config.ropeScaling).toMatchObject({ factor: 32, truncate: false });
  });

  it.each([0, 1])("layer %i equals HF's GptOssAttention in f64 within f32 rounding", (i) => {
    const a = config.layers[i] as AttentionSpec;
    const l = randomLayer(7 + i, a);
    const reference = Float32Array.from(hfGptOssAttention(l, x, n, a.kind === "sliding" ? a.window : null));
    const scale = Math.max(...reference.map(Math.abs));
    const run = (spec: AttentionSpec, yarn = config.ropeScaling) =>
      runSequence(block(l, spec, yarn), x, [9, 1, 1, ...Array(13).fill(1)], pool, new Map(), H).out;
    expect(maxAbsDiff(run(a), reference) / scale).toBeLessThan(1e-5);
    // Each part moves the output ten times past that bound: the sinks, the o_proj bias, and YaRN's
    // unrounded correction range (least in the sliding layer, whose distances are below 4).
    const off = [
      run({ ...a, sinks: false }),
      run({ ...a, outputBias: false }),
      run(a, { ...(config.ropeScaling as YarnScaling), truncate: true }),
    ];
    for (const out of off) expect(maxAbsDiff(out, reference) / scale).toBeGreaterThan(1e-4);
  });

  it("a tiny gpt-oss checkpoint holds every layer's sinks and o_proj bias, and YaRN changes its logprobs", async () => {
    const corpus = await readCorpus();
    const logprobs = async (json: Record<string, unknown>) => {
      const files = minimaxArchitecture.tinyModel?.(json, corpus);
      if (files === undefined) throw new Error("no tiny model");
      expect(files.config.architectures).toEqual(["GptOssForCausalLM"]);
      expect(files.tensors.has("model.layers.1.self_attn.sinks")).toBe(true);
      expect(files.tensors.has("model.layers.1.self_attn.o_proj.bias")).toBe(true);
      return goldenLogprobs(modelOfFiles("gpt-oss", files, minimaxArchitecture));
    };
    const [scaled, plain] = await Promise.all([
      logprobs(GPT_OSS),
      logprobs({ ...GPT_OSS, rope_scaling: null }),
    ]);
    const diff = Math.max(
      ...scaled.promptLogprobs.map((p, i) =>
        Math.abs((p[1] as number) - (plain.promptLogprobs[i]?.[1] as number)),
      ),
    );
    expect(diff).toBeGreaterThan(1e-3);
  });
});
