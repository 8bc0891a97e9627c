import { describe, expect, it } from "vitest";
import { parseDeepseekV3 } from "../../../../src/engine/models/deepseek-v3.js";
import { bringupErrorOf as errorOf, portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("kimi-k2.7-code");

const config = ref.referenceConfig;

describe("Kimi K2 config parsing and loading", () => {
  it("reads the tiny reference config: latent attention sizes, a dense first layer, grouped sigmoid routing", () => {
    const c = parseDeepseekV3(config);
    expect(c.mla).toEqual({
      numHeads: 4,
      qLoraRank: 32,
      kvLoraRank: 32,
      qkNopeHeadDim: 16,
      qkRopeHeadDim: 8,
      vHeadDim: 16,
      ropeTheta: 50000,
      ropeInterleave: true,
    });
    expect(c.layers).toEqual(["dense", "moe", "moe", "moe"]);
    expect(c.moe).toEqual({
      numExperts: 8,
      topK: 2,
      intermediateSize: 32,
      scoring: "sigmoid",
      normTopKProb: true,
      routedScalingFactor: 2.5,
      numGroups: 2,
      topKGroups: 1,
    });
    expect(c.sharedIntermediateSize).toBe(32);
    expect(c.dsa).toBeUndefined();
  });

  it("refuses an odd rotary size, RoPE scaling other than YaRN and impossible grouping, naming the field", () => {
    expect(errorOf(() => parseDeepseekV3({ ...config, qk_rope_head_dim: 7 }))).toEqual({
      code: "MODEL_CONFIG_INVALID",
      message: expect.stringMatching(/qk_rope_head_dim: 7 must be even/),
    });
    expect(
      errorOf(() => parseDeepseekV3({ ...config, rope_scaling: { type: "dynamic", factor: 32 } })).message,
    ).toMatch(/rope_scaling: RoPE scaling "dynamic"/);
    expect(errorOf(() => parseDeepseekV3({ ...config, n_group: 3 })).message).toMatch(
      /n_group: .*8 experts do not split into 3/,
    );
  });

  it("refuses weights whose latent or rotary sizes disagree with the config, naming the tensor", async () => {
    const files = ref.referenceFiles();
    for (const [field, value] of [
      ["kv_lora_rank", 48],
      ["qk_rope_head_dim", 16],
    ] as const) {
      const wrong = { ...files, config: { ...files.config, [field]: value } };
      expect(errorOf(() => ref.build("kimi", wrong))).toEqual({
        code: "MODEL_WEIGHTS_MISMATCH",
        message: expect.stringMatching(
          /model\.layers\.0\.self_attn\.(kv_a_proj_with_mqa|kv_b_proj|q_b_proj)\.weight has shape/,
        ),
      });
    }
    const tensors = new Map(files.tensors);
    tensors.delete("model.layers.2.self_attn.kv_a_layernorm.weight");
    expect(errorOf(() => ref.build("kimi", { ...files, tensors }))).toEqual({
      code: "MODEL_WEIGHT_MISSING",
      message: expect.stringMatching(/model\.layers\.2\.self_attn\.kv_a_layernorm\.weight is missing/),
    });
  });
});
