import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { modelOfFiles } from "../loader/build-model.js";
import { goldenLogprobs } from "../tests/golden-logprobs.js";
import { readCorpus } from "../tiny/corpus.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { deepseekV3Architecture, deepseekV3Parameters, parseDeepseekV3 } from "./deepseek-v3.js";

const PORTS = join(import.meta.dirname, "../../../ports");

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

  it("reads rope_interleave as the mla_rope switch's default: false is half-split latent-attention RoPE", () => {
    expect(parseDeepseekV3(GLM5).mla.ropeInterleave).toBe(true);
    expect(parseDeepseekV3({ ...GLM5, rope_interleave: false }).mla.ropeInterleave).toBe(false);
  });

  it("reads Kimi K2's YaRN rope_scaling into latent attention and the indexer (DeepSeek-V3.2 shares one freqs_cis)", () => {
    const yarn = {
      type: "yarn",
      factor: 32,
      original_max_position_embeddings: 4096,
      beta_fast: 1,
      beta_slow: 1,
      mscale: 1,
      mscale_all_dim: 1,
    };
    const scaling = {
      factor: 32,
      originalMaxPositionEmbeddings: 4096,
      betaFast: 1,
      betaSlow: 1,
      mscale: 1,
      mscaleAllDim: 1,
    };
    const { index_topk: _, ...k2 } = GLM5;
    expect(parseDeepseekV3({ ...k2, model_type: "kimi_k2", rope_scaling: yarn }).mla.ropeScaling).toEqual(
      scaling,
    );
    expect(parseDeepseekV3({ ...GLM5, rope_scaling: yarn }).dsa?.ropeScaling).toEqual(scaling);
    expect(() =>
      parseDeepseekV3({ ...k2, model_type: "kimi_k2", rope_scaling: { type: "linear", factor: 2 } }),
    ).toThrow(/rope_scaling: RoPE scaling "linear" is not applied/);
  });

  it("a tiny Kimi K2 checkpoint computes differently with YaRN's rope_scaling than without", async () => {
    const port = parse(readFileSync(join(PORTS, "kimi-k2.7-code", "port.yaml"), "utf8")).reference.config;
    const corpus = await readCorpus();
    const logprobs = async (config: Record<string, unknown>) => {
      const files = deepseekV3Architecture.tinyModel?.(config, corpus) as TinyModelFiles;
      return goldenLogprobs(modelOfFiles("tiny", files, deepseekV3Architecture));
    };
    const yarn = {
      type: "yarn",
      factor: 32,
      original_max_position_embeddings: 16,
      mscale: 1,
      mscale_all_dim: 1,
    };
    const [plain, scaled] = await Promise.all([
      logprobs(port),
      logprobs({ ...port, rope_scaling: yarn, max_position_embeddings: 512 }),
    ]);
    const diff = Math.max(
      ...plain.promptLogprobs.map((p, i) =>
        Math.abs((p[1] as number) - (scaled.promptLogprobs[i]?.[1] as number)),
      ),
    );
    expect(diff).toBeGreaterThan(1e-3);
  });

  it("reads indexer_types: shared layers run no indexer and reuse the top-k before them (HF glm_moe_dsa)", () => {
    const types = (shared: readonly number[]) =>
      Array.from({ length: GLM5.num_hidden_layers }, (_, i) => (shared.includes(i) ? "shared" : "full"));
    const config = parseDeepseekV3({ ...GLM5, indexer_types: types([1, 2, 5]) });
    expect(config.sharedTopK.flatMap((s, i) => (s ? [i] : []))).toEqual([1, 2, 5]);
    expect(parseDeepseekV3(GLM5).sharedTopK.includes(true)).toBe(false);
    expect(() => parseDeepseekV3({ ...GLM5, indexer_types: types([0]) })).toThrow(
      /indexer_types: layer 0 is "shared"/,
    );
    expect(() => parseDeepseekV3({ ...GLM5, indexer_types: ["full", "shared"] })).toThrow(
      /indexer_types: has 2 entries for 78 layers/,
    );
    const { index_topk: _, ...dense } = GLM5;
    expect(() => parseDeepseekV3({ ...dense, indexer_types: types([]) })).toThrow(
      /indexer_types: names DSA indexer layers, but the config has no index_topk/,
    );
  });

  it("a tiny GLM-5 checkpoint read with shared indexer layers skips their indexers and computes differently", async () => {
    const port = parse(readFileSync(join(PORTS, "glm-5-mxfp4", "port.yaml"), "utf8")).reference.config;
    // A top-k below the golden prompt's 48 tokens, so which tokens are attended matters.
    const files = deepseekV3Architecture.tinyModel?.(
      { ...port, index_topk: 8 },
      await readCorpus(),
    ) as TinyModelFiles;
    const shared = {
      ...files,
      config: { ...files.config, indexer_types: ["full", "full", "shared", "shared"] },
    };
    const model = modelOfFiles("shared", shared, deepseekV3Architecture);
    const parameters = deepseekV3Parameters(deepseekV3Architecture.parseConfig(shared.config, "tiny"));
    expect(parameters.filter(({ decl }) => /layers\.[23]\.self_attn\.indexer/.test(decl.name))).toEqual([]);
    const [own, reused] = await Promise.all([
      goldenLogprobs(modelOfFiles("full", files, deepseekV3Architecture)),
      goldenLogprobs(model),
    ]);
    const diff = Math.max(
      ...own.promptLogprobs.map((p, i) =>
        Math.abs((p[1] as number) - (reused.promptLogprobs[i]?.[1] as number)),
      ),
    );
    expect(diff).toBeGreaterThan(1e-3);
  });
});
