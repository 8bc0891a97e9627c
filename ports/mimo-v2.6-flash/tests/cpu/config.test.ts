import { describe, expect, it } from "vitest";
import { isBringupError } from "../../../../src/common/errors.js";
import { type DecoderConfig, findArchitecture } from "../../../../src/engine/index.js";
import { mimoArchitecture, parseMimoConfig } from "../../../../src/engine/models/mimo.js";
import { referenceConfig } from "./reference.js";

/** The released MiMo-V2-Flash config.json in the Hub's spelling (the fields this code reads). */
function hubConfig(): Record<string, unknown> {
  const global = new Set([0, 5, 11, 17, 23, 29, 35, 41, 47]);
  return {
    model_type: "mimo_v2_flash",
    vocab_size: 152576,
    hidden_size: 4096,
    intermediate_size: 16384,
    num_hidden_layers: 48,
    hybrid_layer_pattern: Array.from({ length: 48 }, (_, i) => (global.has(i) ? 0 : 1)),
    moe_layer_freq: Array.from({ length: 48 }, (_, i) => (i === 0 ? 0 : 1)),
    num_attention_heads: 64,
    num_key_value_heads: 4,
    head_dim: 192,
    v_head_dim: 128,
    swa_num_attention_heads: 64,
    swa_num_key_value_heads: 8,
    swa_head_dim: 192,
    swa_v_head_dim: 128,
    sliding_window: 128,
    rope_theta: 5_000_000,
    swa_rope_theta: 10_000,
    partial_rotary_factor: 0.334,
    add_swa_attention_sink_bias: true,
    add_full_attention_sink_bias: false,
    attention_value_scale: null,
    layernorm_epsilon: 1e-5,
    max_position_embeddings: 262144,
    n_routed_experts: 256,
    num_experts_per_tok: 8,
    moe_intermediate_size: 2048,
    n_shared_experts: null,
    scoring_func: "sigmoid",
    topk_method: "noaux_tc",
    n_group: 1,
    topk_group: 1,
    norm_topk_prob: true,
    routed_scaling_factor: null,
    tie_word_embeddings: false,
  };
}

function errorOf(json: unknown): { code: string; message: string } {
  try {
    parseMimoConfig(json, "config.json");
  } catch (error) {
    if (isBringupError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("the config parsed");
}

describe("MiMo config parsing", () => {
  it("carries the released model's value scale to every layer, and none when it is null", () => {
    const scaled = parseMimoConfig({ ...hubConfig(), attention_value_scale: 0.75 }, "config.json");
    expect(scaled.layers.every((l) => l.attention.valueScale === 0.75)).toBe(true);
    const plain = parseMimoConfig(hubConfig(), "config.json");
    expect(plain.layers.every((l) => l.attention.valueScale === undefined)).toBe(true);
  });

  it("reads the released model's Hub config: 9 global and 39 sliding layers, each kind its own shape", () => {
    const c = parseMimoConfig(hubConfig());
    expect(c.layers).toHaveLength(48);
    const global = c.layers.filter((l) => l.attention.kind === "full");
    const sliding = c.layers.filter((l) => l.attention.kind === "sliding");
    expect(global).toHaveLength(9);
    expect(sliding).toHaveLength(39);
    expect(c.layers[0]?.attention).toEqual({
      kind: "full",
      window: 0,
      numHeads: 64,
      numKvHeads: 4,
      headDim: 192,
      vHeadDim: 128,
      ropeTheta: 5_000_000,
      partialRotaryFactor: 64 / 192,
      bias: false,
      qkNorm: false,
      sinks: false,
    });
    expect(c.layers[1]?.attention).toMatchObject({
      kind: "sliding",
      window: 128,
      numKvHeads: 8,
      headDim: 192,
      vHeadDim: 128,
      ropeTheta: 10_000,
      sinks: true,
    });
    expect(c.layers.map((l) => l.mlp)).toEqual(["dense", ...Array(47).fill("moe")]);
    expect(c.moe).toEqual({
      numExperts: 256,
      topK: 8,
      intermediateSize: 2048,
      scoring: "sigmoid",
      normTopKProb: true,
      routedScalingFactor: 1,
      numGroups: 1,
      topKGroups: 1,
    });
    expect(c.intermediateSize).toBe(16384);
    expect(c.rmsNormEps).toBe(1e-5);
  });

  it("reads transformers' native spelling the same way (sliding layers: twice the KV heads, sinks)", () => {
    const hub = hubConfig();
    const native = {
      ...hub,
      hybrid_layer_pattern: undefined,
      moe_layer_freq: undefined,
      swa_num_attention_heads: undefined,
      swa_num_key_value_heads: undefined,
      swa_head_dim: undefined,
      swa_v_head_dim: undefined,
      swa_rope_theta: undefined,
      rope_theta: undefined,
      partial_rotary_factor: undefined,
      add_swa_attention_sink_bias: undefined,
      add_full_attention_sink_bias: undefined,
      layer_types: (hub.hybrid_layer_pattern as number[]).map((p) =>
        p === 1 ? "sliding_attention" : "full_attention",
      ),
      mlp_layer_types: (hub.moe_layer_freq as number[]).map((f) => (f === 1 ? "sparse" : "dense")),
      rope_parameters: {
        full_attention: { rope_type: "default", rope_theta: 5_000_000, partial_rotary_factor: 0.334 },
        sliding_attention: { rope_type: "default", rope_theta: 10_000, partial_rotary_factor: 0.334 },
      },
    };
    for (const key of Object.keys(native) as (keyof typeof native)[]) {
      if (native[key] === undefined) delete native[key];
    }
    expect(parseMimoConfig(native)).toEqual(parseMimoConfig(hub));
  });

  it("is what the engine's registry finds for the Hub's config.json", async () => {
    const architecture = await findArchitecture(hubConfig(), "config.json");
    expect(architecture).toBe(mimoArchitecture);
    expect(architecture.parseConfig(hubConfig(), "config.json")).toEqual(
      parseMimoConfig(hubConfig(), "config.json"),
    );
  });

  it("reads the tiny reference config: 3 global of 16, asymmetric heads, sinks on sliding layers, grouped MoE", async () => {
    const c: DecoderConfig = parseMimoConfig(await referenceConfig());
    expect(c.layers.flatMap((l, i) => (l.attention.kind === "full" ? [i] : []))).toEqual([0, 5, 11]);
    const global = c.layers[0]?.attention;
    const sliding = c.layers[1]?.attention;
    expect(global).toMatchObject({ numHeads: 2, numKvHeads: 1, headDim: 48, vHeadDim: 32, sinks: false });
    expect(sliding).toMatchObject({ numHeads: 4, numKvHeads: 2, headDim: 24, vHeadDim: 16, sinks: true });
    expect(sliding?.window).toBe(64);
    // Rotated features as transformers counts them: floor(head size * 0.334).
    expect((global?.headDim ?? 0) * (global?.partialRotaryFactor ?? 0)).toBe(16);
    expect((sliding?.headDim ?? 0) * (sliding?.partialRotaryFactor ?? 0)).toBe(8);
    expect(global?.ropeTheta).not.toBe(sliding?.ropeTheta);
    // Equal KV bytes per token in both kinds, so the capacity ratio is the layer count's 16/3.
    const bytes = (a: typeof global) => (a?.numKvHeads ?? 0) * ((a?.headDim ?? 0) + (a?.vHeadDim ?? 0));
    expect(bytes(global)).toBe(bytes(sliding));
    expect(c.layers.map((l) => l.mlp)).toEqual(["dense", ...Array(15).fill("moe")]);
    expect(c.moe).toMatchObject({ numExperts: 8, topK: 2, scoring: "sigmoid", numGroups: 2, topKGroups: 1 });
  });

  const bad: [string, (c: Record<string, unknown>) => void, RegExp][] = [
    ["model_type", (c) => (c.model_type = "llama"), /model_type: .*mimo_v2_flash/],
    ["hidden_act", (c) => (c.hidden_act = "gelu"), /hidden_act: "gelu" is not supported/],
    [
      "hybrid_layer_pattern length",
      (c) => (c.hybrid_layer_pattern = [0, 1]),
      /hybrid_layer_pattern: has 2 entries but num_hidden_layers is 48; give one per layer/,
    ],
    [
      "hybrid_layer_pattern entry",
      (c) => ((c.hybrid_layer_pattern as number[])[3] = 2),
      /hybrid_layer_pattern\.3: .*fix this field/,
    ],
    [
      "both spellings",
      (c) => (c.layer_types = Array(48).fill("full_attention")),
      /layer_types: give either hybrid_layer_pattern .* or layer_types/,
    ],
    [
      "sliding_window",
      (c) => (c.sliding_window = undefined),
      /sliding_window: sliding-window layers need a window size/,
    ],
    [
      "swa heads",
      (c) => (c.swa_num_attention_heads = 12),
      /swa_num_attention_heads: 12 query heads are not a multiple of the 8 key\/value heads/,
    ],
    [
      "global heads",
      (c) => (c.num_key_value_heads = 5),
      /num_attention_heads: 64 query heads are not a multiple of the 5/,
    ],
    [
      "partial_rotary_factor",
      (c) => (c.partial_rotary_factor = 0.33),
      /partial_rotary_factor: 0.33 of a 192-feature global head rotates 63 features, which must be even/,
    ],
    [
      "moe_layer_freq length",
      (c) => (c.moe_layer_freq = [0, 1, 1]),
      /moe_layer_freq: has 3 entries but num_hidden_layers is 48/,
    ],
    [
      "n_routed_experts",
      (c) => (c.n_routed_experts = undefined),
      /n_routed_experts: moe_layer_freq names MoE layers; set the number of experts/,
    ],
    [
      "num_experts_per_tok",
      (c) => (c.num_experts_per_tok = 300),
      /num_experts_per_tok: 300 exceeds the 256 experts/,
    ],
    ["n_group", (c) => (c.n_group = 3), /n_group: 256 experts do not split into 3 equal groups/],
    [
      "topk_group",
      (c) => Object.assign(c, { n_group: 8, topk_group: 9 }),
      /topk_group: 9 exceeds the 8 groups/,
    ],
    [
      "grouped top-k",
      (c) => Object.assign(c, { n_group: 64, topk_group: 1 }),
      /num_experts_per_tok: 8 experts cannot come from 1 group\(s\) of 4/,
    ],
    ["n_shared_experts", (c) => (c.n_shared_experts = 1), /n_shared_experts: MiMo has no shared experts/],
    ["topk_method", (c) => (c.topk_method = "greedy"), /topk_method: "greedy" is not supported/],
    [
      "rope_scaling",
      (c) => (c.rope_scaling = { rope_type: "yarn", factor: 4 }),
      /rope_scaling: RoPE scaling of the global layers is not supported/,
    ],
    [
      "intermediate_size",
      (c) => (c.intermediate_size = undefined),
      /intermediate_size: dense MLP layers need intermediate_size/,
    ],
  ];
  it.each(bad)("refuses a bad %s, naming the field and the fix", (_name, spoil, message) => {
    const config = hubConfig();
    spoil(config);
    const error = errorOf(config);
    expect(error.code).toBe("MODEL_CONFIG_INVALID");
    expect(error.message).toMatch(/^config\.json: /);
    expect(error.message).toMatch(message);
  });
});
