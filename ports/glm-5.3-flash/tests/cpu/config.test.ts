import { describe, expect, it } from "vitest";
import { MlaAttention } from "../../../../src/engine/index.js";
import { parseGlmConfig } from "../../../../src/engine/models/glm-5.3-flash.js";
import { bringupErrorOf, portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("glm-5.3-flash");

const config = ref.referenceConfig;
const lin = config.linear_attn_config as Record<string, unknown>;

/** The BringupError parsing `json` throws. */
const errorOf = (json: unknown) => bringupErrorOf(() => parseGlmConfig(json, "config.json"));

describe("GLM-5.3-Flash config parsing", () => {
  it("reads the tiny reference config: KDA layers from Kimi Linear's 1-based lists, four mHC streams, MoE after the first layer", () => {
    const c = parseGlmConfig(config);
    expect(c.layers.map((l) => l.mixer)).toEqual(["kda", "kda", "kda", "full", "kda", "kda", "kda", "full"]);
    expect(c.layers.map((l) => l.mlp)).toEqual(["dense", ...Array(7).fill("moe")]);
    expect(c.kda).toEqual({ numHeads: 2, headDim: 32, convKernel: 4 });
    expect(c.mhc).toEqual({ streams: 4, sinkhornIters: 20, hcEps: 1e-6, normEps: 1e-6 });
    expect(c.moe).toMatchObject({ numExperts: 4, topK: 2, scoring: "sigmoid", normTopKProb: true });
  });

  it("reads Kimi Linear's full layers as latent attention without RoPE, caching one latent and key part", () => {
    const c = parseGlmConfig(config);
    expect(c.mla).toEqual({
      numHeads: 4,
      qLoraRank: 0,
      kvLoraRank: 32,
      qkNopeHeadDim: 16,
      qkRopeHeadDim: 8,
      vHeadDim: 16,
    });
    expect(parseGlmConfig({ ...config, mla_use_nope: false }).mla.ropeTheta).toBe(10_000);
    const model = ref.referenceModel();
    const full = model.model.layers.filter((l) => l.mixer instanceof MlaAttention);
    expect(full).toHaveLength(2);
    for (const layer of full)
      expect(layer.mixer.states(new Map())).toEqual({
        latent: { kind: "latent", latentDim: 32, ropeDim: 8 },
      });
    expect(errorOf({ ...config, attention_bias: true }).message).toMatch(/attention_bias/);
  });

  it("refuses a layer listed as both kinds or neither, naming the field", () => {
    expect(errorOf({ ...config, linear_attn_config: { ...lin, full_attn_layers: [4, 8, 1] } })).toEqual({
      code: "MODEL_CONFIG_INVALID",
      message: expect.stringMatching(/linear_attn_config: layer 1 \(1-based\) is in both/),
    });
    expect(errorOf({ ...config, linear_attn_config: { ...lin, full_attn_layers: [4] } }).message).toMatch(
      /layer 8 \(1-based\) is in neither/,
    );
  });

  it("refuses a missing KDA field and an unknown layer kind's field by name", () => {
    const { num_heads: _, ...noHeads } = lin;
    expect(errorOf({ ...config, linear_attn_config: noHeads }).message).toMatch(
      /linear_attn_config\.num_heads/,
    );
    expect(errorOf({ ...config, linear_attn_config: { ...lin, mamba_layers: [2] } }).message).toMatch(
      /linear_attn_config/,
    );
  });

  it("refuses weights whose state shapes do not match the config, naming the tensor", async () => {
    const files = ref.referenceFiles();
    const wider = { ...files, config: { ...files.config, linear_attn_config: { ...lin, head_dim: 16 } } };
    expect(() => ref.build("glm", wider)).toThrow(
      expect.objectContaining({
        code: "MODEL_WEIGHTS_MISMATCH",
        subject: "model.layers.0.self_attn.q_proj.weight",
      }),
    );
    const kernel = {
      ...files,
      config: { ...files.config, linear_attn_config: { ...lin, short_conv_kernel_size: 3 } },
    };
    expect(() => ref.build("glm", kernel)).toThrow(
      expect.objectContaining({
        code: "MODEL_WEIGHTS_MISMATCH",
        subject: "model.layers.0.self_attn.q_conv1d.weight",
      }),
    );
  });
});
