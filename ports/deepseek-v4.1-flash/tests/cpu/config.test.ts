import { describe, expect, it } from "vitest";
import { V4Attention } from "../../../../src/engine/blocks/attention/v4-attention.js";
import { V4Moe } from "../../../../src/engine/blocks/mlp/v4-moe.js";
import { parseV4Config } from "../../../../src/engine/models/deepseek-v4.js";
import { bringupErrorOf, portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("deepseek-v4.1-flash");
const config = ref.referenceConfig;

/** The BringupError parsing `json` throws. */
const errorOf = (json: unknown) => bringupErrorOf(() => parseV4Config(json, "config.json"));

describe("DeepSeek-V4 config parsing", () => {
  it("reads the tiny reference config: one layer of each attention kind, the first MoE layer hash-routed", () => {
    const c = parseV4Config(config);
    expect(c.layers.map((l) => l.attention.kind)).toEqual(["sliding", "csa", "hca", "csa"]);
    expect(c.layers.map((l) => l.attention.compressRatio)).toEqual([0, 4, 32, 4]);
    expect(c.layers.map((l) => l.attention.ropeTheta)).toEqual([10_000, 160_000, 160_000, 160_000]);
    expect(c.layers.map((l) => l.moe.routing)).toEqual(["hash", "topk", "topk", "topk"]);
    expect(c.layers[1]?.attention.indexer).toEqual({ numHeads: 2, headDim: 16, topK: 16 });
    expect(c.mhc).toEqual({ streams: 2, sinkhornIters: 20, hcEps: 1e-6, normEps: 1e-6 });
    // The MTP layer: sliding where layer_types stops at num_hidden_layers; top-k routed.
    expect(c.mtpLayers).toBe(1);
    expect([c.mtp.attention.kind, c.mtp.moe.routing]).toEqual(["sliding", "topk"]);
  });

  it("reads the legacy spellings V4 checkpoints ship: compress_ratios, num_hash_layers, qk_rope_head_dim", () => {
    const { layer_types: _, compress_rates: __, ...legacy } = config;
    const c = parseV4Config({
      ...legacy,
      compress_ratios: [1, 4, 128, 4, 128],
      compress_rate_hca: 128,
      num_hash_layers: 2,
      rope_scaling: {
        type: "yarn",
        factor: 16,
        original_max_position_embeddings: 65536,
        beta_fast: 32,
        beta_slow: 1,
      },
    });
    expect(c.layers.map((l) => [l.attention.kind, l.attention.compressRatio])).toEqual([
      ["sliding", 0],
      ["csa", 4],
      ["hca", 128],
      ["csa", 4],
    ]);
    expect(c.layers.map((l) => l.moe.routing)).toEqual(["hash", "hash", "topk", "topk"]);
    // Entry num_hidden_layers of compress_ratios is the MTP layer's (V4-Flash ships 0 there).
    expect([c.mtp.attention.kind, c.mtp.attention.compressRatio, c.mtp.moe.routing]).toEqual([
      "hca",
      128,
      "topk",
    ]);
    // YaRN on the compressed layers only, with HF's forced attention factor of 1.
    expect(c.layers[0]?.attention.yarn).toBeUndefined();
    expect(c.layers[1]?.attention.yarn).toMatchObject({ factor: 16, mscale: 1, mscaleAllDim: 1 });
  });

  it("refuses what the model cannot honour, naming the field", () => {
    expect(errorOf({ ...config, num_key_value_heads: 2 }).message).toMatch(/num_key_value_heads/);
    expect(errorOf({ ...config, layer_types: ["sliding_attention"] }).message).toMatch(
      /layer_types: lists 1 layers but num_hidden_layers is 4/,
    );
    const { layer_types: _, ...noTypes } = config;
    expect(errorOf({ ...noTypes, compress_ratios: [0, 4, 8, 4] }).message).toMatch(
      /compress_ratios\[2\]: 8 is neither 0 or 1/,
    );
    expect(errorOf({ ...noTypes, compress_ratios: [0, 4, 32, 4, 8] }).message).toMatch(
      /compress_ratios\[4\]: 8 is neither 0 or 1/,
    );
    expect(errorOf({ ...config, n_shared_experts: 2 }).message).toMatch(/n_shared_experts/);
    expect(errorOf({ ...config, scoring_func: "softmax" }).message).toMatch(/scoring_func/);
  });
});

describe("the tiny reference model", () => {
  const model = ref.referenceModel();

  it("builds V4 attention and V4 MoE in every layer, experts in MXFP4", () => {
    expect(model.model.layers.map((l) => l.mixer instanceof V4Attention && l.ffn instanceof V4Moe)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(model.model.layers[0]?.ffn.outputTensors[0]).toBe("model.layers.0.mlp.experts.down_proj_blocks");
  });

  it("keeps per layer a window ring, and in compressed layers their rows, in the typed state plan", () => {
    const states = model.model.states(new Map());
    expect(Object.keys(states[0] ?? {})).toEqual(["kv"]);
    expect(Object.keys(states[1] ?? {})).toEqual([
      "kv",
      "compressorSource",
      "compressed",
      "indexerSource",
      "indexerKeys",
    ]);
    expect(states[2]?.compressed).toEqual({ kind: "compressed", width: 32, ratio: 32 });
  });
});

describe("a config that disagrees with the weights", () => {
  const files = ref.referenceFiles();
  /** The error loading the tiny checkpoint under its config changed by `change`. */
  const loadError = (change: Record<string, unknown>) =>
    bringupErrorOf(() => ref.build("changed", { ...files, config: { ...files.config, ...change } }));

  it("names the tensor whose shape a compression ratio contradicts", () => {
    const e = loadError({
      compress_rates: { compressed_sparse_attention: 8, heavily_compressed_attention: 32 },
    });
    expect(e.code).toBe("MODEL_WEIGHTS_MISMATCH");
    expect(e.message).toMatch(/model\.layers\.1\.self_attn\.compressor\.position_bias has shape \[4, 64\]/);
  });

  it("names the tensor a layer pattern lacks or leaves unread", () => {
    const types = config.layer_types as string[];
    const missing = loadError({ layer_types: ["compressed_sparse_attention", ...types.slice(1)] });
    expect(missing.message).toMatch(/model\.layers\.0\.self_attn\.compressor\.kv_proj/);
    const unread = loadError({ layer_types: [types[0], "sliding_attention", ...types.slice(2)] });
    expect(unread.message).toMatch(/model\.layers\.1\.self_attn\.compressor\./);
    expect(unread.message.split("\n")).toHaveLength(1);
  });

  it("names the hash-routing table a layer lacks or leaves unread", () => {
    expect(loadError({ num_hash_layers: 2 }).message).toMatch(/model\.layers\.1\.mlp\.gate\.tid2eid/);
    expect(loadError({ num_hash_layers: 0 }).message).toMatch(/model\.layers\.0\.mlp\.gate\.tid2eid/);
  });
});
