/**
 * GLM-5.3-Flash on the reference engine: KDA layers with a few full-attention layers, joined by an
 * mHC residual, with a mixture of experts after the first dense layers.
 *
 * Lineage (see the design's reference/architectures.md): Kimi Linear for the layer mix and KDA
 * (vLLM `models/kimi_linear.py`, `layers/kda.py`; fla `layers/kda.py`) and DeepSeek-V4 for the
 * hyper-connections (HF transformers `models/deepseek_v4`). config.json reads Kimi Linear's fields
 * (`linear_attn_config` with 1-based `kda_layers` / `full_attn_layers`, `num_heads`, `head_dim`,
 * `short_conv_kernel_size`; the MoE's `num_experts`, `num_experts_per_token`,
 * `first_k_dense_replace`, `moe_router_activation_func`, `moe_renormalize`, `num_expert_group`,
 * `topk_group`, `routed_scaling_factor`, `num_shared_experts`) and DeepSeek-V4's (`hc_mult`,
 * `hc_sinkhorn_iters`, `hc_eps`).
 *
 * Weight names are the lineage's: KDA under `model.layers.N.self_attn` (q/k/v_proj, q/k/v_conv1d,
 * f_a_proj, f_b_proj, dt_bias, A_log, b_proj, g_a_proj, g_b_proj, o_norm, o_proj); experts under
 * `block_sparse_moe` (gate with e_score_correction_bias, experts.E.w1/w2/w3, and the shared
 * experts' one MLP `shared_experts.gate/up/down_proj` of num_shared_experts x
 * moe_intermediate_size, added to the routed experts' scaled mix as vLLM's KimiMoE does) and
 * dense layers' `mlp.gate/up/down_proj`, as Kimi Linear's checkpoints; the hyper-connections in transformers'
 * DeepSeek-V4 names (`model.layers.N.attn_hc.{fn,base,scale}`, `ffn_hc.*`,
 * `model.hc_head.hc_{fn,base,scale}`).
 *
 * The full-attention layers are Kimi Linear's: multi-head latent attention (the engine's MLA block,
 * shared with the DeepSeek-V3 layout) read from `num_attention_heads`, `q_lora_rank` (null in Kimi
 * Linear: queries straight from `q_proj`), `kv_lora_rank`, `qk_nope_head_dim`, `qk_rope_head_dim`,
 * `v_head_dim` and `mla_use_nope` (true in Kimi Linear: the rotary part of each query and of the
 * shared key is left unrotated, positions reach the model through the KDA layers' short
 * convolutions; false rotates it with `rope_theta`), under DeepSeek's names (`self_attn.q_proj`,
 * `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`, `o_proj`). Kimi Linear's `head_dim` and
 * `num_key_value_heads` describe no tensor of these layers (vLLM's KimiMLAAttention does not read
 * them) and are ignored; `attention_bias` must be false, as its projections have no biases.
 */
import { z } from "zod";
import type { Architecture, ModelConfig, TinyModelOptions } from "../architecture.js";
import {
  MLA_CACHE_SWITCH,
  MLA_SWITCHES,
  MlaAttention,
  type MlaSpec,
  mlaNames,
  mlaParameters,
  mlaStates,
} from "../blocks/attention/mla-attention.js";
import {
  KDA_SWITCHES,
  KdaAttention,
  type KdaSpec,
  kdaParameters,
  kdaStates,
} from "../blocks/linear-attention/kda-attention.js";
import {
  type MoeNames,
  RoutedMoe,
  routedMoeParameters,
  sharedExpertParameters,
} from "../blocks/mlp/routed-moe.js";
import type { MoeSpec } from "../blocks/mlp/routing.js";
import { MIXTRAL_MLP_NAMES, SwigluMlp, swigluParameters } from "../blocks/mlp/swiglu-mlp.js";
import { declared, type ParameterDecl, type Parameters } from "../blocks/parameters.js";
import type { MhcConfig } from "../blocks/residual/mhc.js";
import { modelOfFiles } from "../loader/build-model.js";
import type { WeightSource } from "../loader/weight-source.js";
import type { CausalLM } from "../model/causal-lm.js";
import type { TinyModelFiles } from "../tiny/files.js";
import {
  LATENT_CIRCUIT,
  latentCircuitAttention,
  placeLatentCopyCircuit,
} from "../tiny/latent-copy-circuit.js";
import { tinyKit } from "../tiny/port-kit.js";
import {
  nonNegative,
  parseConfigFields,
  positive,
  ROPE_FIELDS,
  ropeConfig,
  TOKEN_ID_FIELDS,
  tokenIdConfig,
  type UnreadFields,
} from "./config-fields.js";
import { embeddingParameters, layerPrefix, mhcDecoder, mhcDecoderParameters } from "./decoder.js";

export const MODEL_TYPE = "glm5_3_flash";

/** The config.json fields this code reads; others are ignored. */
const GlmConfig = z.looseObject({
  model_type: z.literal(MODEL_TYPE),
  vocab_size: positive,
  hidden_size: positive,
  intermediate_size: positive,
  num_hidden_layers: positive,
  hidden_act: z.literal("silu").default("silu"),
  rms_norm_eps: z.number().positive().default(1e-6),
  max_position_embeddings: positive.default(1_048_576),
  tie_word_embeddings: z.boolean().default(false),
  // Full-attention layers: Kimi Linear's latent attention (see the file's doc).
  num_attention_heads: positive,
  q_lora_rank: nonNegative.nullish(),
  kv_lora_rank: positive,
  qk_nope_head_dim: positive,
  qk_rope_head_dim: positive,
  v_head_dim: positive,
  mla_use_nope: z.boolean().default(true),
  ...ROPE_FIELDS,
  attention_bias: z.literal(false).default(false),
  // KDA layers (Kimi Linear).
  linear_attn_config: z.strictObject({
    kda_layers: z.array(positive),
    full_attn_layers: z.array(positive),
    num_heads: positive,
    head_dim: positive,
    short_conv_kernel_size: positive.default(4),
  }),
  // mHC (DeepSeek-V4).
  hc_mult: positive.default(4),
  hc_sinkhorn_iters: positive.default(20),
  hc_eps: z.number().positive().default(1e-6),
  // Mixture of experts (Kimi Linear); absent: every layer dense.
  num_experts: positive.nullish(),
  num_experts_per_token: positive.nullish(),
  moe_intermediate_size: positive.nullish(),
  first_k_dense_replace: nonNegative.default(0),
  // Every layer after the dense ones is MoE, as in Kimi Linear's code.
  moe_layer_freq: z.literal(1).optional(),
  moe_router_activation_func: z.enum(["sigmoid", "softmax"]).default("sigmoid"),
  moe_renormalize: z.boolean().default(true),
  routed_scaling_factor: z.number().positive().default(1),
  num_expert_group: positive.default(1),
  topk_group: positive.default(1),
  num_shared_experts: nonNegative.default(0),
  ...TOKEN_ID_FIELDS,
});

/** The config.json fields this family reads (its schema's). */
export const GLM_FLASH_READ_FIELDS: readonly string[] = Object.keys(GlmConfig.shape);

/** Fields of the lineage's public configs (Kimi Linear) not read here, and why they do not matter. */
export const GLM_FLASH_UNREAD_FIELDS: UnreadFields = {
  head_dim:
    "Kimi Linear's head_dim describes no tensor of its layers; vLLM's KimiMLAAttention does not read it.",
  num_key_value_heads:
    "latent attention has no separate key/value heads; vLLM's KimiMLAAttention does not read it.",
  model_max_length: "the tokenizer's length limit; the model's is max_position_embeddings.",
  use_grouped_topk:
    "grouped top-k is num_expert_group and topk_group, which are read; with one group it is plain top-k.",
  num_nextn_predict_layers:
    "Kimi Linear ships none (0); multi-token prediction serves speculative decoding only.",
};

/** Each layer's mixer and feed-forward kind. */
export interface GlmLayerSpec {
  readonly mixer: "kda" | "full";
  readonly mlp: "dense" | "moe";
}

/** The engine's view of a GLM-5.3-Flash config.json. */
export interface GlmConfig extends ModelConfig {
  readonly intermediateSize: number;
  readonly rmsNormEps: number;
  readonly tieWordEmbeddings: boolean;
  readonly mla: MlaSpec;
  readonly kda: KdaSpec;
  readonly mhc: MhcConfig;
  readonly moe?: MoeSpec;
  /** Width of the shared experts' one MLP (num_shared_experts x moe_intermediate_size); 0 for none. */
  readonly sharedIntermediateSize: number;
  readonly layers: readonly GlmLayerSpec[];
}

/** Parses a GLM-5.3-Flash config.json; MODEL_CONFIG_INVALID names the field to fix. */
export function parseGlmConfig(json: unknown, source = "config.json"): GlmConfig {
  const { fields: c, fail } = parseConfigFields(GlmConfig, json, source, "GLM-5.3-Flash");
  const { theta: ropeTheta } = ropeConfig(c, fail, { defaultTheta: 10_000 });
  const L = c.num_hidden_layers;
  const lin = c.linear_attn_config;
  // Kimi Linear numbers its layers from 1 in these lists.
  const kinds = Array.from({ length: L }, (_, i) => {
    const kda = lin.kda_layers.includes(i + 1);
    const full = lin.full_attn_layers.includes(i + 1);
    if (kda === full) {
      fail(
        "linear_attn_config",
        `layer ${i + 1} (1-based) is ${kda ? "in both kda_layers and full_attn_layers" : "in neither kda_layers nor full_attn_layers"}; list every layer exactly once.`,
      );
    }
    return kda ? ("kda" as const) : ("full" as const);
  });
  for (const [field, list] of [
    ["kda_layers", lin.kda_layers],
    ["full_attn_layers", lin.full_attn_layers],
  ] as const) {
    const beyond = list.find((n) => n > L);
    if (beyond !== undefined)
      fail(`linear_attn_config.${field}`, `layer ${beyond} is beyond num_hidden_layers ${L} (1-based).`);
  }
  if (!c.mla_use_nope && c.qk_rope_head_dim % 2 !== 0)
    fail(
      "qk_rope_head_dim",
      `${c.qk_rope_head_dim} must be even when mla_use_nope is false (RoPE rotates pairs).`,
    );
  let moe: MoeSpec | undefined;
  if (c.num_experts != null) {
    const topK =
      c.num_experts_per_token ??
      fail("num_experts_per_token", "a mixture of experts needs the experts per token.");
    moe = {
      numExperts: c.num_experts,
      topK,
      intermediateSize:
        c.moe_intermediate_size ??
        fail("moe_intermediate_size", "a mixture of experts needs each expert's size."),
      scoring: c.moe_router_activation_func,
      normTopKProb: c.moe_renormalize,
      routedScalingFactor: c.routed_scaling_factor,
      numGroups: c.num_expert_group,
      topKGroups: c.topk_group,
    };
  }
  return {
    modelType: MODEL_TYPE,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    intermediateSize: c.intermediate_size,
    rmsNormEps: c.rms_norm_eps,
    maxPositionEmbeddings: c.max_position_embeddings,
    tieWordEmbeddings: c.tie_word_embeddings,
    mla: {
      numHeads: c.num_attention_heads,
      qLoraRank: c.q_lora_rank ?? 0,
      kvLoraRank: c.kv_lora_rank,
      qkNopeHeadDim: c.qk_nope_head_dim,
      qkRopeHeadDim: c.qk_rope_head_dim,
      vHeadDim: c.v_head_dim,
      ...(c.mla_use_nope ? {} : { ropeTheta }),
    },
    kda: { numHeads: lin.num_heads, headDim: lin.head_dim, convKernel: lin.short_conv_kernel_size },
    mhc: {
      streams: c.hc_mult,
      sinkhornIters: c.hc_sinkhorn_iters,
      hcEps: c.hc_eps,
      normEps: c.rms_norm_eps,
    },
    ...(moe ? { moe } : {}),
    sharedIntermediateSize: moe ? c.num_shared_experts * moe.intermediateSize : 0,
    layers: kinds.map((mixer, i) => ({
      mixer,
      mlp: moe !== undefined && i >= c.first_k_dense_replace ? "moe" : "dense",
    })),
    ...tokenIdConfig(c),
  };
}

/** Where a GLM-5.3-Flash MoE layer keeps its router and experts (Mixtral's names, as Kimi Linear). */
function moeNames(prefix: string): MoeNames {
  return { base: `${prefix}.block_sparse_moe`, expert: MIXTRAL_MLP_NAMES };
}

/** Where a KDA layer's tensors sit. */
function kdaPrefix(prefix: string): string {
  return `${prefix}.self_attn`;
}

/** GLM-5.3-Flash from engine blocks: KDA or GQA mixers, MLP or MoE, each joined by an mHC connection. */
export function buildGlm(config: GlmConfig, w: WeightSource): CausalLM {
  const H = config.hiddenSize;
  const eps = config.rmsNormEps;
  return mhcDecoder(
    w,
    { ...config, numLayers: config.layers.length },
    (i, p) => {
      const spec = config.layers[i] as GlmLayerSpec;
      const mixer =
        spec.mixer === "kda"
          ? KdaAttention.load(w, kdaPrefix(p), config.kda, H)
          : MlaAttention.load(w, mlaNames(p), config.mla, H, eps);
      const moe = config.moe;
      if (spec.mlp === "dense" || moe === undefined)
        return { mixer, ffn: SwigluMlp.load(w, `${p}.mlp`, H, config.intermediateSize) };
      return {
        mixer,
        ffn: RoutedMoe.loadWithShared(w, moeNames(p), moe, H, config.sharedIntermediateSize),
      };
    },
    [...KDA_SWITCHES, ...MLA_SWITCHES, MLA_CACHE_SWITCH],
  );
}

/**
 * The tiny reference model of `config`: a byte-level BPE trained on `corpus` and seeded random f32
 * weights for every tensor the config implies, initialized as the lineage initializes them where it
 * matters for the dynamics (A_log from log U(1, 16), dt_bias the inverse softplus of a rate in
 * [0.001, 0.1], as fla's KDA layer does). The same config, corpus and seed give the same bytes.
 */
/**
 * Every parameter of `spec`'s model under the lineage's names, in checkpoint order (with `vocab`
 * ids in place of the config's where given). A real-size config gives the real checkpoint's.
 */
export function glmParameters(spec: GlmConfig, vocab = spec.vocabSize): ParameterDecl[] {
  const out: ParameterDecl[] = [];
  const add = (p: Parameters | readonly ParameterDecl[]) =>
    out.push(...(Array.isArray(p) ? (p as readonly ParameterDecl[]) : declared(p as Parameters)));
  const H = spec.hiddenSize;
  add(embeddingParameters({ ...spec, vocabSize: vocab }));
  add(mhcDecoderParameters(spec.mhc, spec.layers.length, H));
  spec.layers.forEach((layer, i) => {
    const p = layerPrefix(i);
    add(
      layer.mixer === "kda"
        ? kdaParameters(kdaPrefix(p), spec.kda, H)
        : mlaParameters(mlaNames(p), spec.mla, H),
    );
    if (layer.mlp === "moe" && spec.moe !== undefined) {
      const { router, experts } = routedMoeParameters(moeNames(p), spec.moe, H, { correctionBias: true });
      add([...router, ...experts]);
      if (spec.sharedIntermediateSize > 0)
        add(sharedExpertParameters(moeNames(p), H, spec.sharedIntermediateSize));
    } else add(swigluParameters(`${p}.mlp`, H, spec.intermediateSize));
  });
  return out;
}

export function glmTinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions = {},
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const spec = parseGlmConfig(config, "reference config");
  const kit = tinyKit(spec, corpus, seed);
  kit.parameters(glmParameters(spec, kit.vocab));
  return kit.files(config, "Glm53FlashForCausalLM", options.port);
}

/**
 * The retrieval variant: the engine's latent copy circuit (tiny/latent-copy-circuit.ts) placed into
 * a four-layer GLM (KDA, full, KDA, full) with two residual streams. The KDA layers and MLPs are
 * silenced and the mHC connections made plain; the first MLA layer carries the previous-token
 * heads and the second the induction head, sized by latentCircuitAttention. The previous-token
 * heads find their distance through RoPE, so this variant sets mla_use_nope false (Kimi Linear's
 * full layers, unrotated, leave positions to the KDA layers, which the circuit silences).
 */
export function glmRetrievalModel(
  corpus: string,
  options: TinyModelOptions & { readonly maxPositionEmbeddings: number },
): TinyModelFiles {
  const config: Record<string, unknown> = {
    model_type: MODEL_TYPE,
    vocab_size: 515,
    ...latentCircuitAttention(),
    mla_use_nope: false,
    intermediate_size: 1,
    num_hidden_layers: 4,
    linear_attn_config: {
      kda_layers: [1, 3],
      full_attn_layers: [2, 4],
      num_heads: 1,
      head_dim: 8,
      short_conv_kernel_size: 4,
    },
    hc_mult: 2,
    rms_norm_eps: 1e-6,
    max_position_embeddings: options.maxPositionEmbeddings,
    tie_word_embeddings: false,
  };
  const files = glmTinyModel(config, corpus, options);
  const built = modelOfFiles("retrieval", files, glmFlashArchitecture);
  return placeLatentCopyCircuit(files, built, { ...LATENT_CIRCUIT, seed: options.seed ?? 0 });
}

export const glmFlashArchitecture: Architecture<GlmConfig> = {
  parseConfig: parseGlmConfig,
  build: buildGlm,
  states: (config, switches) =>
    config.layers.map((l) =>
      l.mixer === "kda" ? kdaStates(config.kda) : mlaStates(config.mla, undefined, switches),
    ),
  tinyModel: glmTinyModel,
  retrievalModel: (_config, corpus, options) => glmRetrievalModel(corpus, options),
};
