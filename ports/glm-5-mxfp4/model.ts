/**
 * GLM-5.2 / GLM-5.3 in MXFP4 on the reference engine (config.json model_type "glm_moe_dsa", HF
 * `GlmMoeDsaForCausalLM`): DeepSeek-V3's layout with DeepSeek sparse attention, composed by the
 * engine's models/deepseek-v3.ts. Every layer is multi-head latent attention whose DSA indexer
 * (`self_attn.indexer.wq_b`, `wk`, `k_norm` with its bias, `weights_proj`; config `index_n_heads`,
 * `index_head_dim`, `index_topk`) picks the top-k earlier tokens each query attends; the first
 * layers are dense, the rest route MXFP4 experts with sigmoid scores and a score-correction bias,
 * beside a shared expert.
 *
 * Switches: `dsa_indexer` (exact f32 scores, or the reference's Hadamard + FP8 per 128 values),
 * `dsa_attention` (sparse, or the dense fallback vllm-gaudi runs), `mla_form` (see mla-attention.ts).
 *
 * The retrieval variant for the needle gate is the engine's copy circuit placed in latent-attention
 * terms (tiny/latent-copy-circuit.ts): two MLA layers with indexers whose top-k is far below the
 * context, so the indexer itself must find the needle for it to be copied.
 */
import type { Architecture, DeepseekV3Config, PortModel, TinyModelFiles } from "../../src/engine/index.js";
import {
  buildDeepseekV3,
  deepseekV3States,
  deepseekV3TinyModel,
  latentCopyHidden,
  parseDeepseekV3,
  placeLatentCopyCircuit,
  tinyFilesToModel,
} from "../../src/engine/index.js";

export const MODEL_TYPE = "glm_moe_dsa";

export function parseGlm5Config(json: unknown, source = "config.json"): DeepseekV3Config {
  return parseDeepseekV3(json, source, MODEL_TYPE, "GLM-5");
}

export const glm5Architecture: Architecture<DeepseekV3Config> = {
  modelTypes: [MODEL_TYPE],
  parseConfig: parseGlm5Config,
  build: buildDeepseekV3,
  states: deepseekV3States,
};

/** A BPE trained on the corpus and seeded random weights, routed experts MXFP4-encoded. */
export function glm5TinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: { readonly seed?: number } = {},
): TinyModelFiles {
  return deepseekV3TinyModel(parseGlm5Config(config, "reference config"), config, corpus, {
    seed: options.seed ?? 0,
    architecture: "GlmMoeDsaForCausalLM",
    port: "glm-5-mxfp4",
  });
}

const CIRCUIT = { m: 8, u: 32, ngram: 6, matchLogit: 60, prevMargin: 30, outputLogit: 40 } as const;
/** Tokens each query attends in the retrieval variant: far fewer than the needle gate's contexts. */
export const RETRIEVAL_TOP_K = 32;

/**
 * The retrieval variant: two MLA + DSA layers (dense MLPs, silenced) sized for the latent copy
 * circuit: six heads with 48 non-rotary and 8 rotary query/key features, a query latent of the six
 * match codes (48) and a KV latent of those plus an output code (80), indexers of 8 heads of 64.
 */
export function glm5RetrievalModel(
  corpus: string,
  options: { readonly maxPositionEmbeddings: number; readonly seed?: number },
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const codes = CIRCUIT.ngram * CIRCUIT.m;
  const config: Record<string, unknown> = {
    model_type: MODEL_TYPE,
    vocab_size: 515,
    hidden_size: latentCopyHidden(CIRCUIT.m, CIRCUIT.u, CIRCUIT.ngram),
    intermediate_size: 1,
    num_hidden_layers: 2,
    num_attention_heads: CIRCUIT.ngram,
    q_lora_rank: codes,
    kv_lora_rank: codes + CIRCUIT.u,
    qk_nope_head_dim: codes,
    qk_rope_head_dim: 8,
    v_head_dim: CIRCUIT.u,
    rope_theta: 10_000,
    index_n_heads: 8,
    index_head_dim: 64,
    index_topk: RETRIEVAL_TOP_K,
    rms_norm_eps: 1e-6,
    max_position_embeddings: options.maxPositionEmbeddings,
    tie_word_embeddings: false,
  };
  const files = glm5TinyModel(config, corpus, { seed });
  const built = tinyFilesToModel("retrieval", files, [glm5Architecture]);
  return placeLatentCopyCircuit(files, built, { ...CIRCUIT, seed });
}

export const portModel: PortModel = {
  architecture: glm5Architecture,
  tinyModel: glm5TinyModel,
  retrievalModel: (corpus, options) =>
    glm5RetrievalModel(corpus, { maxPositionEmbeddings: options.maxPositionEmbeddings }),
};
