import { describe, expect, it } from "vitest";
import { parseDeepseekV3 } from "./deepseek-v3.js";

/** GLM-5's DSA layout (model_type glm_moe_dsa) at its public sizes, RoPE spelled the public GLM-5.x way. */
const GLM5 = {
  model_type: "glm_moe_dsa",
  vocab_size: 154_880,
  hidden_size: 6144,
  intermediate_size: 12_288,
  num_hidden_layers: 78,
  num_attention_heads: 64,
  max_position_embeddings: 202_752,
  q_lora_rank: 2048,
  kv_lora_rank: 512,
  qk_nope_head_dim: 192,
  qk_rope_head_dim: 64,
  v_head_dim: 256,
  index_n_heads: 32,
  index_head_dim: 128,
  index_topk: 2048,
  rope_parameters: { rope_type: "default", rope_theta: 8e6 },
  indexer_rope_interleave: true,
};

describe("the DeepSeek-V3 layout reads a real checkpoint's config as its lineage defines it", () => {
  it("takes the RoPE base from rope_parameters when the config has no top-level rope_theta (GLM-5.x)", () => {
    const config = parseDeepseekV3(GLM5);
    expect(config.mla.ropeTheta).toBe(8e6);
    expect(config.dsa?.ropeTheta).toBe(8e6);
  });

  it("pairs the DSA indexer's RoPE as indexer_rope_interleave says, half-split when absent (DeepSeek-V3.2)", () => {
    expect(parseDeepseekV3(GLM5).dsa?.ropeInterleave).toBe(true);
    const { indexer_rope_interleave: _, ...v32 } = GLM5;
    expect(parseDeepseekV3({ ...v32, model_type: "deepseek_v3" }).dsa?.ropeInterleave).toBe(false);
  });

  it("takes the FP8 indexer's scale format from quantization_config.scale_fmt (DeepSeek-V3.2), amax / 448 without it", () => {
    const fp8 = { quant_method: "fp8", fmt: "e4m3", scale_fmt: "ue8m0", weight_block_size: [128, 128] };
    expect(parseDeepseekV3({ ...GLM5, quantization_config: fp8 }).dsa?.fp8Scale).toBe("ue8m0");
    expect(parseDeepseekV3(GLM5).dsa?.fp8Scale).toBe("amax");
    expect(() => parseDeepseekV3({ ...GLM5, quantization_config: { ...fp8, scale_fmt: "e8m0" } })).toThrow(
      /quantization_config\.scale_fmt/,
    );
  });

  it("refuses what it would compute differently: shared indexer layers, half-split latent-attention RoPE", () => {
    const indexer_types = ["full", "shared", "full"];
    expect(
      parseDeepseekV3({ ...GLM5, indexer_types: ["full", "full"], rope_interleave: true }).dsa,
    ).toBeDefined();
    expect(() => parseDeepseekV3({ ...GLM5, indexer_types })).toThrow(/indexer_types: layer 1 is "shared"/);
    expect(() => parseDeepseekV3({ ...GLM5, rope_interleave: false })).toThrow(/rope_interleave: false/);
  });

  it("refuses Kimi K2's YaRN rope_scaling by name rather than computing without it", () => {
    const { index_topk: _, ...k2 } = GLM5;
    const yarn = {
      type: "yarn",
      factor: 32,
      original_max_position_embeddings: 4096,
      mscale: 1,
      mscale_all_dim: 1,
    };
    expect(() => parseDeepseekV3({ ...k2, model_type: "kimi_k2", rope_scaling: yarn })).toThrow(
      /rope_scaling: RoPE scaling "yarn" is not applied/,
    );
  });
});
