/**
 * Kimi-K2.7-Code on the reference engine: Kimi K2's DeepSeek-V3 layout (config.json model_type
 * "kimi_k2", HF `DeepseekV3ForCausalLM` tensor names), composed by the engine's
 * models/deepseek-v3.ts: multi-head latent attention in every layer (the cache keeps only the
 * normalized latent and the shared rotary key per token), a first dense layer, then routed experts
 * with sigmoid scores, a score-correction bias, grouped top-k and a shared expert. The routed
 * experts are MXFP4 (`experts.N.*_proj.weight_blocks` / `_scales`), as the model is published; the
 * engine multiplies them through its generic matmul, which unpacks each row.
 *
 * Latent attention runs in one of three forms (the `mla_form` switch): absorbed (the default:
 * kv_b_proj folded into the query and the output, attention over the latent itself), expanded
 * (per-head keys and values from the latent) or vLLM's split of the two between prefill and decode.
 * The `mla_cache` switch keeps every head's key and value instead of the latent, as an engine
 * without MLA support would: the baseline of the port's KV capacity gate.
 */
import type { Architecture, DeepseekV3Config, PortModel } from "../../src/engine/index.js";
import {
  buildDeepseekV3,
  deepseekV3States,
  deepseekV3TinyModel,
  parseDeepseekV3,
} from "../../src/engine/index.js";

export const MODEL_TYPE = "kimi_k2";

export function parseKimiConfig(json: unknown, source = "config.json"): DeepseekV3Config {
  return parseDeepseekV3(json, source, MODEL_TYPE, "Kimi K2");
}

export const kimiArchitecture: Architecture<DeepseekV3Config> = {
  modelTypes: [MODEL_TYPE],
  parseConfig: parseKimiConfig,
  build: buildDeepseekV3,
  states: deepseekV3States,
};

export const portModel: PortModel = {
  architecture: kimiArchitecture,
  /** A BPE trained on the corpus and seeded random weights, routed experts in MXFP4. */
  tinyModel: (config, corpus, options = {}) =>
    deepseekV3TinyModel(parseKimiConfig(config, "reference config"), config, corpus, {
      seed: options.seed ?? 0,
      architecture: "DeepseekV3ForCausalLM",
      port: "kimi-k2.7-code",
    }),
};
