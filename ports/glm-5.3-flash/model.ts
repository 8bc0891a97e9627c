/**
 * GLM-5.3-Flash on the reference engine: KDA layers with a few full-attention layers, joined by an
 * mHC residual, with a mixture of experts after the first dense layers.
 *
 * Lineage (see ../../../shared/reference/architectures.md): Kimi Linear for the layer mix and KDA
 * (vLLM `models/kimi_linear.py`, `layers/kda.py`; fla `layers/kda.py`) and DeepSeek-V4 for the
 * hyper-connections (HF transformers `models/deepseek_v4`). config.json reads Kimi Linear's fields
 * (`linear_attn_config` with 1-based `kda_layers` / `full_attn_layers`, `num_heads`, `head_dim`,
 * `short_conv_kernel_size`; the MoE's `num_experts`, `num_experts_per_token`,
 * `first_k_dense_replace`, `moe_router_activation_func`, `moe_renormalize`, `num_expert_group`,
 * `topk_group`, `routed_scaling_factor`) and DeepSeek-V4's (`hc_mult`, `hc_sinkhorn_iters`,
 * `hc_eps`).
 *
 * Weight names are the lineage's: KDA under `model.layers.N.self_attn` (q/k/v_proj, q/k/v_conv1d,
 * f_a_proj, f_b_proj, dt_bias, A_log, b_proj, g_a_proj, g_b_proj, o_norm, o_proj); experts under
 * `block_sparse_moe` (gate with e_score_correction_bias, experts.E.w1/w2/w3) and dense layers'
 * `mlp.gate/up/down_proj`, as Kimi Linear's checkpoints; the hyper-connections in transformers'
 * DeepSeek-V4 names (`model.layers.N.attn_hc.{fn,base,scale}`, `ffn_hc.*`,
 * `model.hc_head.hc_{fn,base,scale}`).
 *
 * One departure: Kimi Linear's full-attention layers are latent attention without RoPE. Until the
 * engine has the MLA block (it comes with the Kimi-K2.7-Code and GLM-5 MXFP4 ports), this port's
 * full layers are GQA with RoPE (`num_attention_heads`, `num_key_value_heads`, `head_dim`,
 * `v_head_dim`, `rope_theta`, `partial_rotary_factor`, `attention_bias`), under the usual
 * `self_attn.q/k/v/o_proj` names. The port's page says so.
 */
import { z } from "zod";
import { BringupError } from "../../src/common/errors.js";
import type {
  Architecture,
  AttentionSpec,
  DecoderLayer,
  ModelConfig,
  MoeSpec,
  PortModel,
  TinyModelFiles,
  WeightSource,
} from "../../src/engine/index.js";
import {
  attentionNames,
  CausalLM,
  copySlots,
  embeddingAndHead,
  filled,
  GqaAttention,
  gqaStates,
  HF_MLP_NAMES,
  KDA_SWITCHES,
  KdaAttention,
  type KdaSpec,
  kdaStates,
  type MhcConfig,
  MhcConnection,
  MhcResidual,
  MIXTRAL_MLP_NAMES,
  placeCopyCircuit,
  RoutedMoe,
  SwigluMlp,
  tinyFilesToModel,
  tinyKit,
} from "../../src/engine/index.js";

export const MODEL_TYPE = "glm5_3_flash";

const positive = z.number().int().positive();
const nonNegative = z.number().int().nonnegative();

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
  // Full-attention layers (GQA here; see the file's doc).
  num_attention_heads: positive,
  num_key_value_heads: positive,
  head_dim: positive,
  v_head_dim: positive.nullish(),
  rope_theta: z.number().positive().default(10_000),
  partial_rotary_factor: z.number().gt(0).lte(1).default(1),
  attention_bias: z.boolean().default(false),
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
  moe_router_activation_func: z.enum(["sigmoid", "softmax"]).default("sigmoid"),
  moe_renormalize: z.boolean().default(true),
  routed_scaling_factor: z.number().positive().default(1),
  num_expert_group: positive.default(1),
  topk_group: positive.default(1),
  num_shared_experts: nonNegative.default(0),
  bos_token_id: nonNegative.nullish(),
  eos_token_id: z.union([nonNegative, z.array(nonNegative)]).nullish(),
});

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
  readonly attention: AttentionSpec;
  readonly kda: KdaSpec;
  readonly mhc: MhcConfig;
  readonly moe?: MoeSpec;
  readonly layers: readonly GlmLayerSpec[];
}

/** Parses a GLM-5.3-Flash config.json; MODEL_CONFIG_INVALID names the field to fix. */
export function parseGlmConfig(json: unknown, source = "config.json"): GlmConfig {
  const fail = (field: string, message: string): never => {
    throw new BringupError("MODEL_CONFIG_INVALID", `${source}: ${field}: ${message}`, { subject: source });
  };
  const parsed = GlmConfig.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    fail(
      issue?.path.join(".") || "(root)",
      `${issue?.message ?? "invalid"}; fix this field (a GLM-5.3-Flash config.json is read).`,
    );
  }
  const c = parsed.data as z.infer<typeof GlmConfig>;
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
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    fail(
      "num_attention_heads",
      `${c.num_attention_heads} query heads are not a multiple of the ${c.num_key_value_heads} key/value heads; make them divisible.`,
    );
  }
  const rotary = Math.round(c.head_dim * c.partial_rotary_factor);
  if (rotary % 2 !== 0)
    fail("partial_rotary_factor", `rotates ${rotary} features of each head; make it even.`);
  if (c.num_shared_experts > 0)
    fail("num_shared_experts", "shared experts are not in this port's model code yet; set 0.");
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
  const eos = c.eos_token_id;
  return {
    modelType: MODEL_TYPE,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    intermediateSize: c.intermediate_size,
    rmsNormEps: c.rms_norm_eps,
    maxPositionEmbeddings: c.max_position_embeddings,
    tieWordEmbeddings: c.tie_word_embeddings,
    attention: {
      kind: "full",
      window: 0,
      numHeads: c.num_attention_heads,
      numKvHeads: c.num_key_value_heads,
      headDim: c.head_dim,
      vHeadDim: c.v_head_dim ?? c.head_dim,
      ropeTheta: c.rope_theta,
      partialRotaryFactor: rotary / c.head_dim,
      bias: c.attention_bias,
      qkNorm: false,
      sinks: false,
    },
    kda: { numHeads: lin.num_heads, headDim: lin.head_dim, convKernel: lin.short_conv_kernel_size },
    mhc: {
      streams: c.hc_mult,
      sinkhornIters: c.hc_sinkhorn_iters,
      hcEps: c.hc_eps,
      normEps: c.rms_norm_eps,
    },
    ...(moe ? { moe } : {}),
    layers: kinds.map((mixer, i) => ({
      mixer,
      mlp: moe !== undefined && i >= c.first_k_dense_replace ? "moe" : "dense",
    })),
    ...(c.bos_token_id != null ? { bosTokenId: c.bos_token_id } : {}),
    eosTokenIds: eos == null ? [] : Array.isArray(eos) ? eos : [eos],
  };
}

/** GLM-5.3-Flash from engine blocks: KDA or GQA mixers, MLP or MoE, each joined by an mHC connection. */
export function buildGlm(config: GlmConfig, w: WeightSource): CausalLM {
  const H = config.hiddenSize;
  const eps = config.rmsNormEps;
  const layers: DecoderLayer[] = config.layers.map((spec, i) => {
    const p = `model.layers.${i}`;
    const mixer =
      spec.mixer === "kda"
        ? KdaAttention.load(w, `${p}.self_attn`, config.kda, H)
        : GqaAttention.load(w, attentionNames(p), config.attention, H, eps);
    const ffn =
      spec.mlp === "moe" && config.moe !== undefined
        ? RoutedMoe.load(w, { base: `${p}.block_sparse_moe`, expert: MIXTRAL_MLP_NAMES }, config.moe, H)
        : SwigluMlp.load(w, `${p}.mlp`, H, config.intermediateSize);
    return {
      mixer,
      mixerConnection: MhcConnection.load(
        w,
        `${p}.attn_hc`,
        `${p}.input_layernorm.weight`,
        config.mhc,
        H,
        eps,
      ),
      ffn,
      ffnConnection: MhcConnection.load(
        w,
        `${p}.ffn_hc`,
        `${p}.post_attention_layernorm.weight`,
        config.mhc,
        H,
        eps,
      ),
    };
  });
  return new CausalLM({
    hiddenSize: H,
    vocabSize: config.vocabSize,
    rmsNormEps: eps,
    residual: MhcResidual.load(w, config.mhc, H),
    layers,
    ...embeddingAndHead(w, config),
    switches: KDA_SWITCHES,
  });
}

export const glmArchitecture: Architecture<GlmConfig> = {
  modelTypes: [MODEL_TYPE],
  parseConfig: parseGlmConfig,
  build: buildGlm,
  states: (config) =>
    config.layers.map((l) => (l.mixer === "kda" ? kdaStates(config.kda) : gqaStates(config.attention))),
};

/**
 * The tiny reference model of `config`: a byte-level BPE trained on `corpus` and seeded random f32
 * weights for every tensor the config implies, initialized as the lineage initializes them where it
 * matters for the dynamics (A_log from log U(1, 16), dt_bias the inverse softplus of a rate in
 * [0.001, 0.1], as fla's KDA layer does). The same config, corpus and seed give the same bytes.
 */
export function glmTinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: { readonly seed?: number } = {},
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const spec = parseGlmConfig(config, "reference config");
  const kit = tinyKit(spec, corpus, seed);
  const H = spec.hiddenSize;
  const n = spec.mhc.streams;
  const mhcSite = (site: string) => {
    kit.random(`${site}.fn`, [(2 + n) * n, n * H], 0.02);
    kit.random(`${site}.base`, [(2 + n) * n], 0.5);
    kit.put(`${site}.scale`, [3], filled(3, 1));
  };
  kit.random("model.embed_tokens.weight", [kit.vocab, H], 1);
  spec.layers.forEach((layer, i) => {
    const p = `model.layers.${i}`;
    kit.ones(`${p}.input_layernorm.weight`, H);
    kit.ones(`${p}.post_attention_layernorm.weight`, H);
    mhcSite(`${p}.attn_hc`);
    mhcSite(`${p}.ffn_hc`);
    const a = `${p}.self_attn`;
    if (layer.mixer === "kda") {
      const { numHeads: h, headDim: d, convKernel: K } = spec.kda;
      const P = h * d;
      for (const x of ["q", "k", "v"]) {
        kit.matrix(`${a}.${x}_proj.weight`, P, H);
        kit.random(`${a}.${x}_conv1d.weight`, [P, 1, K], 1 / Math.sqrt(K));
      }
      kit.matrix(`${a}.f_a_proj.weight`, d, H);
      kit.matrix(`${a}.f_b_proj.weight`, P, d);
      kit.matrix(`${a}.g_a_proj.weight`, d, H);
      kit.matrix(`${a}.g_b_proj.weight`, P, d);
      kit.matrix(`${a}.b_proj.weight`, h, H);
      kit.matrix(`${a}.o_proj.weight`, H, P);
      kit.uniform(`${a}.A_log`, [1, 1, h, 1], (r) => Math.log(1 + 15 * r));
      // dt in [0.001, 0.1] log-uniformly, stored as its inverse softplus log(e^dt - 1).
      kit.uniform(`${a}.dt_bias`, [P], (r) => Math.log(Math.expm1(0.001 * 100 ** r)));
      kit.ones(`${a}.o_norm.weight`, d);
    } else {
      kit.attention(attentionNames(p), spec.attention, H);
    }
    if (layer.mlp === "moe" && spec.moe !== undefined) {
      const m = spec.moe;
      const base = `${p}.block_sparse_moe`;
      kit.matrix(`${base}.gate.weight`, m.numExperts, H);
      kit.random(`${base}.gate.e_score_correction_bias`, [m.numExperts], 0.1);
      for (let e = 0; e < m.numExperts; e++)
        kit.mlp(`${base}.experts.${e}`, MIXTRAL_MLP_NAMES, H, m.intermediateSize);
    } else {
      kit.mlp(`${p}.mlp`, HF_MLP_NAMES, H, spec.intermediateSize);
    }
  });
  kit.random("model.hc_head.hc_fn", [n, n * H], 0.02);
  kit.random("model.hc_head.hc_base", [n], 0.5);
  kit.put("model.hc_head.hc_scale", [1], filled(1, 1));
  kit.ones("model.norm.weight", H);
  if (!spec.tieWordEmbeddings) kit.matrix("lm_head.weight", kit.vocab, H);
  return kit.files(config, "Glm53FlashForCausalLM", "glm-5.3-flash");
}

/**
 * The retrieval variant: the engine's copy circuit placed into a four-layer GLM (KDA, full, KDA,
 * full) with two residual streams. The KDA layers and MLPs are silenced, the mHC connections made
 * plain, the first full layer carries six previous-token heads over one shared key/value head and
 * the second one induction head (its other five heads silent). Both see the whole context, so the
 * rotary part of their heads (8 features: four frequency pairs) keeps the previous-token pick 30
 * logits above every other distance up to max_position_embeddings.
 */
const CIRCUIT = { m: 8, u: 32, ngram: 6, matchLogit: 60, prevMargin: 30, outputLogit: 40 } as const;
const RETRIEVAL_ROTARY = 8;
const RETRIEVAL_HEAD = RETRIEVAL_ROTARY + CIRCUIT.ngram * CIRCUIT.m;

export function glmRetrievalModel(
  corpus: string,
  options: { readonly maxPositionEmbeddings: number; readonly seed?: number },
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const config: Record<string, unknown> = {
    model_type: MODEL_TYPE,
    vocab_size: 515,
    hidden_size: copySlots(CIRCUIT.m, CIRCUIT.u, CIRCUIT.ngram).hidden,
    intermediate_size: 1,
    num_hidden_layers: 4,
    num_attention_heads: CIRCUIT.ngram,
    num_key_value_heads: 1,
    head_dim: RETRIEVAL_HEAD,
    v_head_dim: CIRCUIT.u,
    rope_theta: 10_000,
    partial_rotary_factor: RETRIEVAL_ROTARY / RETRIEVAL_HEAD,
    attention_bias: true,
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
  const files = glmTinyModel(config, corpus, { seed });
  const built = tinyFilesToModel("retrieval", files, [glmArchitecture]);
  return placeCopyCircuit(files, built, { ...CIRCUIT, seed });
}

export const portModel: PortModel = {
  architecture: glmArchitecture,
  tinyModel: glmTinyModel,
  retrievalModel: (corpus, options) =>
    glmRetrievalModel(corpus, { maxPositionEmbeddings: options.maxPositionEmbeddings }),
};
