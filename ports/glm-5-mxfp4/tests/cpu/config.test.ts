import { describe, expect, it } from "vitest";
import { DsaIndexer, type MlaAttention } from "../../../../src/engine/index.js";
import { parseDeepseekV3 } from "../../../../src/engine/models/deepseek-v3.js";
import { bringupErrorOf as errorOf, portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("glm-5-mxfp4");

const config = ref.referenceConfig;

describe("GLM-5 config parsing and loading", () => {
  it("reads the indexer's sizes and top-k beside latent attention and the experts", () => {
    const c = parseDeepseekV3(config);
    expect(c.dsa).toEqual({ numHeads: 4, headDim: 32, ropeDim: 8, ropeTheta: 10000, topK: 256 });
    expect(c.layers).toEqual(["dense", "moe", "moe", "moe"]);
    expect(c.moe).toMatchObject({
      numExperts: 8,
      topK: 2,
      numGroups: 1,
      topKGroups: 1,
      routedScalingFactor: 2.5,
    });
  });

  it("refuses a top-k of zero or beyond max_position_embeddings, and an indexer without a query latent", () => {
    for (const topk of [0, 8193]) {
      expect(errorOf(() => parseDeepseekV3({ ...config, index_topk: topk }))).toEqual({
        code: "MODEL_CONFIG_INVALID",
        message: expect.stringMatching(
          new RegExp(`index_topk: ${topk} must be between 1 and max_position_embeddings`),
        ),
      });
    }
    expect(errorOf(() => parseDeepseekV3({ ...config, index_head_dim: 48 })).message).toMatch(
      /index_head_dim: 48 must be a power of two/,
    );
    expect(errorOf(() => parseDeepseekV3({ ...config, q_lora_rank: 0 })).message).toMatch(/q_lora_rank/);
  });

  it("loads MXFP4 experts and an indexer per layer, and refuses a missing indexer tensor by name", async () => {
    const files = ref.referenceFiles();
    const model = ref.build("glm5", files);
    for (const layer of model.model.layers) {
      expect((layer.mixer as MlaAttention).indexer).toBeInstanceOf(DsaIndexer);
      // The cache keeps the latent and rotary key (40) and the indexer key (32) per token.
      expect(layer.mixer.states(new Map())).toEqual({
        latent: { kind: "latent", latentDim: 32, ropeDim: 8 },
        indexerKeys: { kind: "indexer-keys", headDim: 32 },
      });
    }
    expect(files.tensors.get("model.layers.1.mlp.experts.0.down_proj.weight_blocks")?.shape).toEqual([
      64, 1, 16,
    ]);
    for (const name of ["wq_b.weight", "wk.weight", "k_norm.weight", "k_norm.bias", "weights_proj.weight"]) {
      const tensors = new Map(files.tensors);
      tensors.delete(`model.layers.3.self_attn.indexer.${name}`);
      expect(errorOf(() => ref.build("glm5", { ...files, tensors }))).toEqual({
        code: "MODEL_WEIGHT_MISSING",
        message: expect.stringContaining(`model.layers.3.self_attn.indexer.${name} is missing`),
      });
    }
  });

  it("refuses a config whose latent, rotary or indexer sizes disagree with the weights, naming the tensor", async () => {
    const files = ref.referenceFiles();
    for (const [field, value, tensor] of [
      ["kv_lora_rank", 48, /self_attn\.kv_a_proj_with_mqa\.weight has shape/],
      ["qk_rope_head_dim", 16, /self_attn\.(q_b_proj|kv_a_proj_with_mqa)\.weight has shape/],
      ["index_head_dim", 64, /self_attn\.indexer\.wq_b\.weight has shape/],
      ["index_n_heads", 8, /self_attn\.indexer\.wq_b\.weight has shape/],
    ] as const) {
      const wrong = { ...files, config: { ...files.config, [field]: value } };
      expect(errorOf(() => ref.build("glm5", wrong))).toEqual({
        code: "MODEL_WEIGHTS_MISMATCH",
        message: expect.stringMatching(tensor),
      });
    }
  });
});
