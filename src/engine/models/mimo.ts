/**
 * The MiMo-V2-Flash family on the reference engine, shared by the MiMo-V2.6-Flash and -Pro ports:
 * how its config.json maps onto engine blocks, the tiny reference model of a config, and a
 * constructed retrieval variant for the needle gate.
 *
 * The architecture (XiaomiMiMo/MiMo-V2-Flash lineage, model_type "mimo_v2_flash"):
 * - a per-layer mix of global (full) and sliding-window attention, each kind with its own head
 *   counts, query/key head size (larger) and value head size (smaller), and RoPE base; both rotate
 *   only the first part of each query/key head (partial rotary);
 * - a learned sink logit per head where the config asks (the softmax denominator gains exp(sink);
 *   nothing is attended), on the sliding layers in the released model;
 * - a dense MLP where the config says (the first layer) and elsewhere a mixture of experts with
 *   sigmoid scores, a score-correction bias that only picks experts, and grouped top-k.
 *
 * config.json comes in two spellings and both are read: the Hub's (hybrid_layer_pattern and
 * moe_layer_freq as 0/1 lists, swa_* head fields, rope_theta and swa_rope_theta,
 * add_{swa,full}_attention_sink_bias, layernorm_epsilon) and transformers' native one (layer_types,
 * mlp_layer_types, rope_parameters per layer type; sliding layers have twice the KV heads and sinks).
 *
 * The model composes the engine's blocks layer by layer (`buildMimo`): GQA attention of the
 * layer's kind, then a SwiGLU MLP or a routed MoE, joined by pre-norm residuals. Weight names are
 * the Hub checkpoint's: q/k/v/o_proj, the sink logits as `self_attn.attention_sink_bias`,
 * mlp.gate.weight with mlp.gate.e_score_correction_bias, mlp.experts.N.*_proj and the dense
 * mlp.*_proj. The checkpoint's MTP layers (model.mtp.*) are knowingly not used. The released model
 * scales values by attention_value_scale (0.707), applied after v_proj.
 */
import { z } from "zod";
import type { Architecture, TinyModelOptions } from "../architecture.js";
import { type AttentionSpec, attentionNames } from "../blocks/attention/gqa-attention.js";
import type { MoeSpec } from "../blocks/mlp/routing.js";
import { HF_MLP_NAMES } from "../blocks/mlp/swiglu-mlp.js";
import { modelOfFiles } from "../loader/build-model.js";
import type { WeightSource } from "../loader/weight-source.js";
import type { CausalLM } from "../model/causal-lm.js";
import { copySlots } from "../tiny/copy-circuit.js";
import { placeCopyCircuit } from "../tiny/copy-circuit-placement.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { tinyKit } from "../tiny/port-kit.js";
import {
  type Fail,
  nonNegative,
  parseConfigFields,
  positive,
  TOKEN_ID_FIELDS,
  tokenIdConfig,
  type UnreadFields,
} from "./config-fields.js";
import {
  type DecoderConfig,
  decoderStates,
  type GqaDecoderNames,
  gqaDecoder,
  gqaDecoderParameters,
  type LayerSpec,
} from "./decoder.js";

export const MODEL_TYPE = "mimo_v2_flash";

// Every key is one the engine reads: a scaling kind other than default, or any other key, is
// refused by name rather than dropped (MiMo's own code applies no RoPE scaling).
const ropeParameters = z.strictObject({
  rope_type: z.literal("default").optional(),
  type: z.literal("default").optional(),
  rope_theta: z.number().positive().optional(),
  partial_rotary_factor: z.number().gt(0).lte(1).optional(),
});

/** The config.json fields this code reads (Hub and native spellings); others are ignored. */
const MimoConfig = z.looseObject({
  model_type: z.literal(MODEL_TYPE),
  vocab_size: positive,
  hidden_size: positive,
  intermediate_size: positive.optional(),
  num_hidden_layers: positive,
  hidden_act: z.string().default("silu"),
  // Global (full attention) layers.
  num_attention_heads: positive,
  num_key_value_heads: positive,
  head_dim: positive.default(192),
  v_head_dim: positive.default(128),
  rope_theta: z.number().positive().optional(),
  partial_rotary_factor: z.number().gt(0).lte(1).optional(),
  // Sliding-window layers (Hub spelling; each defaults to the global layers' value).
  swa_num_attention_heads: positive.nullish(),
  swa_num_key_value_heads: positive.nullish(),
  swa_head_dim: positive.nullish(),
  swa_v_head_dim: positive.nullish(),
  swa_rope_theta: z.number().positive().nullish(),
  sliding_window: positive.nullish(),
  sliding_window_size: positive.nullish(),
  // HF's MiMo attends sliding layers in chunks of this many tokens: the window, checked equal.
  attention_chunk_size: positive.nullish(),
  // A block size from which HF derives the layer pattern; the public configs give the pattern.
  hybrid_block_size: z.null().optional(),
  // The q/k/v projections' storage: the family reads them apart (q_proj, k_proj, v_proj).
  attention_projection_layout: z.string().optional(),
  hybrid_layer_pattern: z.array(z.union([z.literal(0), z.literal(1)])).optional(),
  layer_types: z.array(z.enum(["full_attention", "sliding_attention"])).optional(),
  // Per layer type (transformers' native spelling), or flat as MiMo-V2.6's Hub config has it, where
  // it restates rope_theta and partial_rotary_factor (checked equal: they are the global layers').
  rope_parameters: z
    .strictObject({
      full_attention: ropeParameters.optional(),
      sliding_attention: ropeParameters.optional(),
      rope_theta: z.number().positive().optional(),
      partial_rotary_factor: z.number().gt(0).lte(1).optional(),
      rope_type: z.literal("default").optional(),
      type: z.literal("default").optional(),
    })
    .nullish(),
  rope_scaling: z.unknown().optional(),
  add_swa_attention_sink_bias: z.boolean().optional(),
  add_full_attention_sink_bias: z.boolean().optional(),
  attention_value_scale: z.number().positive().nullish(),
  attention_bias: z.boolean().default(false),
  // Norms, positions, embeddings.
  layernorm_epsilon: z.number().positive().optional(),
  rms_norm_eps: z.number().positive().optional(),
  max_position_embeddings: positive.default(131072),
  tie_word_embeddings: z.boolean().default(false),
  // Mixture of experts.
  n_routed_experts: positive.nullish(),
  num_experts_per_tok: positive.nullish(),
  moe_intermediate_size: positive.nullish(),
  n_shared_experts: nonNegative.nullish(),
  scoring_func: z.enum(["sigmoid", "softmax"]).default("sigmoid"),
  topk_method: z.string().nullish(),
  n_group: positive.nullish(),
  topk_group: positive.nullish(),
  norm_topk_prob: z.boolean().default(true),
  routed_scaling_factor: z.number().positive().nullish(),
  moe_layer_freq: z.array(z.union([z.literal(0), z.literal(1)])).optional(),
  mlp_layer_types: z.array(z.enum(["dense", "sparse"])).optional(),
  ...TOKEN_ID_FIELDS,
});
type MimoConfig = z.infer<typeof MimoConfig>;

/** The config.json fields this family reads (its schema's). */
export const MIMO_READ_FIELDS: readonly string[] = Object.keys(MimoConfig.shape);

const MULTIMODAL = "a token id of the multimodal inputs; the engine runs the text model only.";

/** Fields of the lineage's public configs (MiMo-V2.x) not read here, and why they do not matter. */
export const MIMO_UNREAD_FIELDS: UnreadFields = {
  num_nextn_predict_layers:
    "the multi-token-prediction layers serve speculative decoding only; their model.mtp.* tensors are ignored.",
  moe_router_dtype:
    "the precision the lineage's kernels route in; the reference routes in f32, the oracle's precision.",
  quantization_config: "the loader reads FP8 and MXFP4 weights and their scales from the tensors themselves.",
  vision_model_type: "the vision tower's type; the engine runs the text model only.",
  audio_token_id: MULTIMODAL,
  audio_start_token_id: MULTIMODAL,
  audio_end_token_id: MULTIMODAL,
  image_token_id: MULTIMODAL,
  video_token_id: MULTIMODAL,
  vision_start_token_id: MULTIMODAL,
  vision_end_token_id: MULTIMODAL,
};

/** Parses a MiMo-V2-Flash config.json (either spelling) into the engine's per-layer view. */
export function parseMimoConfig(json: unknown, source = "config.json"): DecoderConfig {
  const { fields: c, fail } = parseConfigFields(MimoConfig, json, source, "MiMo-V2-Flash");
  const L = c.num_hidden_layers;
  if (c.hidden_act !== "silu") fail("hidden_act", `"${c.hidden_act}" is not supported; MiMo uses silu.`);
  if (c.rope_scaling !== undefined && c.rope_scaling !== null) {
    fail(
      "rope_scaling",
      "RoPE scaling of the global layers is not supported by the reference engine yet; remove it (null).",
    );
  }

  const native = c.layer_types !== undefined;
  const sliding = layerKinds(c, L, fail);
  const window = c.sliding_window ?? c.sliding_window_size;
  if (sliding.some(Boolean) && window == null) {
    fail("sliding_window", "sliding-window layers need a window size in tokens; set sliding_window.");
  }
  if (c.attention_chunk_size != null && window != null && c.attention_chunk_size !== window)
    fail(
      "attention_chunk_size",
      `${c.attention_chunk_size} differs from the sliding window ${window}; the engine attends one window per sliding layer.`,
    );
  if (c.attention_projection_layout !== undefined)
    fail(
      "attention_projection_layout",
      `"${c.attention_projection_layout}" is not read: this family reads separate q_proj, k_proj and v_proj tensors, so a checkpoint storing them otherwise cannot load; split them first.`,
    );

  const rope = (kind: "full_attention" | "sliding_attention") => c.rope_parameters?.[kind];
  const attention = (isSliding: boolean): AttentionSpec => {
    const prefix = isSliding ? "swa_" : "";
    const kind = isSliding ? "sliding_attention" : "full_attention";
    const numHeads = (isSliding ? c.swa_num_attention_heads : undefined) ?? c.num_attention_heads;
    // transformers' native spelling has no swa_* fields: its sliding layers have twice the KV heads.
    const numKvHeads =
      (isSliding ? c.swa_num_key_value_heads : undefined) ??
      (isSliding && native ? 2 * c.num_key_value_heads : c.num_key_value_heads);
    const headDim = (isSliding ? c.swa_head_dim : undefined) ?? c.head_dim;
    const vHeadDim = (isSliding ? c.swa_v_head_dim : undefined) ?? c.v_head_dim;
    const ropeTheta =
      rope(kind)?.rope_theta ?? (isSliding ? (c.swa_rope_theta ?? 10_000) : (c.rope_theta ?? 5_000_000));
    const factor = rope(kind)?.partial_rotary_factor ?? c.partial_rotary_factor ?? 0.334;
    if (numHeads % numKvHeads !== 0) {
      fail(
        `${prefix}num_attention_heads`,
        `${numHeads} query heads are not a multiple of the ${numKvHeads} key/value heads (${prefix}num_key_value_heads); make them divisible.`,
      );
    }
    // As transformers computes it: the rotated features are floor(head size * factor).
    const rotary = Math.floor(headDim * factor + 1e-9);
    if (rotary === 0 || rotary % 2 !== 0) {
      fail(
        "partial_rotary_factor",
        `${factor} of a ${headDim}-feature ${isSliding ? "sliding" : "global"} head rotates ${rotary} features, which must be even and at least 2; change the factor or ${prefix}head_dim.`,
      );
    }
    const sinks = isSliding
      ? (c.add_swa_attention_sink_bias ?? native)
      : (c.add_full_attention_sink_bias ?? false);
    return {
      kind: isSliding ? "sliding" : "full",
      window: isSliding ? (window as number) : 0,
      numHeads,
      numKvHeads,
      headDim,
      vHeadDim,
      ropeTheta,
      // Exactly rotary / headDim so the engine's rounding gives the same rotated size.
      partialRotaryFactor: rotary / headDim,
      bias: c.attention_bias,
      qkNorm: false,
      sinks,
      ...(c.attention_value_scale != null && c.attention_value_scale !== 1
        ? { valueScale: c.attention_value_scale }
        : {}),
    };
  };
  const global = attention(false);
  const flat = c.rope_parameters;
  if (flat?.rope_theta !== undefined && flat.rope_theta !== global.ropeTheta)
    fail(
      "rope_parameters.rope_theta",
      `${flat.rope_theta} differs from the global layers' RoPE base ${global.ropeTheta}; make them agree.`,
    );
  const globalFactor = rope("full_attention")?.partial_rotary_factor ?? c.partial_rotary_factor;
  if (flat?.partial_rotary_factor !== undefined && flat.partial_rotary_factor !== globalFactor)
    fail(
      "rope_parameters.partial_rotary_factor",
      `${flat.partial_rotary_factor} differs from partial_rotary_factor ${globalFactor}; make them agree.`,
    );
  const swa = sliding.some(Boolean) ? attention(true) : global;

  const moeLayers = mlpKinds(c, L, fail);
  let moe: MoeSpec | undefined;
  if (moeLayers.some(Boolean)) moe = moeSpec(c, fail);
  const intermediateSize =
    moeLayers.every(Boolean) && moe !== undefined
      ? (c.intermediate_size ?? moe.intermediateSize)
      : (c.intermediate_size ??
        fail("intermediate_size", "dense MLP layers need intermediate_size; set it."));

  const layers: LayerSpec[] = sliding.map((isSliding, i) => ({
    attention: isSliding ? swa : global,
    mlp: moeLayers[i] ? "moe" : "dense",
  }));
  return {
    modelType: MODEL_TYPE,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    intermediateSize,
    rmsNormEps: c.layernorm_epsilon ?? c.rms_norm_eps ?? 1e-5,
    maxPositionEmbeddings: c.max_position_embeddings,
    tieWordEmbeddings: c.tie_word_embeddings,
    ...(moe ? { moe } : {}),
    layers,
    ...tokenIdConfig(c),
  };
}

/** true for each sliding-window layer. */
function layerKinds(c: MimoConfig, L: number, fail: Fail): boolean[] {
  if (c.hybrid_layer_pattern !== undefined && c.layer_types !== undefined) {
    fail("layer_types", "give either hybrid_layer_pattern (Hub) or layer_types (transformers), not both.");
  }
  if (c.hybrid_layer_pattern !== undefined) {
    if (c.hybrid_layer_pattern.length !== L) {
      fail(
        "hybrid_layer_pattern",
        `has ${c.hybrid_layer_pattern.length} entries but num_hidden_layers is ${L}; give one per layer (0 global, 1 sliding window).`,
      );
    }
    return c.hybrid_layer_pattern.map((p) => p === 1);
  }
  if (c.layer_types !== undefined) {
    if (c.layer_types.length !== L) {
      fail(
        "layer_types",
        `has ${c.layer_types.length} entries but num_hidden_layers is ${L}; give one per layer.`,
      );
    }
    return c.layer_types.map((t) => t === "sliding_attention");
  }
  // transformers' default: global attention on the first layer and every sixth.
  return Array.from({ length: L }, (_, i) => !(i === 0 || (i + 1) % 6 === 0));
}

/** true for each mixture-of-experts layer. */
function mlpKinds(c: MimoConfig, L: number, fail: Fail): boolean[] {
  if (c.moe_layer_freq !== undefined && c.mlp_layer_types !== undefined) {
    fail("mlp_layer_types", "give either moe_layer_freq (Hub) or mlp_layer_types (transformers), not both.");
  }
  let kinds: boolean[];
  if (c.moe_layer_freq !== undefined) {
    if (c.moe_layer_freq.length !== L) {
      fail(
        "moe_layer_freq",
        `has ${c.moe_layer_freq.length} entries but num_hidden_layers is ${L}; give one per layer (0 dense, 1 MoE).`,
      );
    }
    kinds = c.moe_layer_freq.map((f) => f === 1);
  } else if (c.mlp_layer_types !== undefined) {
    if (c.mlp_layer_types.length !== L) {
      fail(
        "mlp_layer_types",
        `has ${c.mlp_layer_types.length} entries but num_hidden_layers is ${L}; give one per layer.`,
      );
    }
    kinds = c.mlp_layer_types.map((t) => t === "sparse");
  } else {
    // transformers' default: the first layer dense, the rest MoE (dense throughout without experts).
    kinds = Array.from({ length: L }, (_, i) => i > 0 && c.n_routed_experts != null);
  }
  return kinds;
}

function moeSpec(c: MimoConfig, fail: Fail): MoeSpec {
  const field = c.moe_layer_freq !== undefined ? "moe_layer_freq" : "mlp_layer_types";
  const numExperts =
    c.n_routed_experts ?? fail("n_routed_experts", `${field} names MoE layers; set the number of experts.`);
  const topK =
    c.num_experts_per_tok ?? fail("num_experts_per_tok", "MoE layers need the experts per token; set it.");
  const intermediateSize =
    c.moe_intermediate_size ?? fail("moe_intermediate_size", "MoE layers need each expert's size; set it.");
  if (topK > numExperts) {
    fail("num_experts_per_tok", `${topK} exceeds the ${numExperts} experts (n_routed_experts); lower it.`);
  }
  if ((c.n_shared_experts ?? 0) > 0) {
    fail("n_shared_experts", "MiMo has no shared experts and the engine loads none; set 0 or null.");
  }
  if (c.topk_method != null && c.topk_method !== "noaux_tc") {
    fail(
      "topk_method",
      `"${c.topk_method}" is not supported; MiMo routes with "noaux_tc" (bias-corrected grouped top-k).`,
    );
  }
  const numGroups = c.n_group ?? 1;
  const topKGroups = c.topk_group ?? 1;
  if (numExperts % numGroups !== 0) {
    fail("n_group", `${numExperts} experts do not split into ${numGroups} equal groups; pick a divisor.`);
  }
  const perGroup = numExperts / numGroups;
  if (numGroups > 1 && perGroup < 2) {
    fail("n_group", `groups are scored by their two best experts, so each needs at least 2; lower n_group.`);
  }
  if (topKGroups > numGroups) {
    fail("topk_group", `${topKGroups} exceeds the ${numGroups} groups (n_group); lower it.`);
  }
  if (topK > topKGroups * perGroup) {
    fail(
      "num_experts_per_tok",
      `${topK} experts cannot come from ${topKGroups} group(s) of ${perGroup}; raise topk_group or lower it.`,
    );
  }
  return {
    numExperts,
    topK,
    intermediateSize,
    scoring: c.scoring_func,
    normTopKProb: c.norm_topk_prob,
    // The Hub config stores null for "no rescale".
    routedScalingFactor: c.routed_scaling_factor ?? 1,
    numGroups,
    topKGroups,
  };
}

/** The Hub checkpoint's name for the sink logits under `self_attn`. */
const HUB_SINKS_NAME = "attention_sink_bias";

/** Where a MiMo layer keeps its attention (sinks under the Hub's name) and its MoE (with score-correction biases). */
const MIMO_NAMES: GqaDecoderNames = {
  attention: (p) => attentionNames(p, HUB_SINKS_NAME),
  moe: (p) => ({ base: `${p}.mlp`, expert: HF_MLP_NAMES }),
  correctionBias: true,
};

/** MiMo's layers from engine blocks: GQA attention of each layer's kind, then an MLP or a routed MoE. */
export function buildMimo(config: DecoderConfig, w: WeightSource): CausalLM {
  return gqaDecoder(config, w, MIMO_NAMES);
}

export const mimoArchitecture: Architecture<DecoderConfig> = {
  parseConfig: parseMimoConfig,
  build: buildMimo,
  states: decoderStates,
  // The multi-token-prediction layers draft for speculative decoding, which the engine does not run.
  ignoresTensor: (name) => name.startsWith("model.mtp."),
  tinyModel: mimoTinyModel,
  retrievalModel: (_config, corpus, options) => mimoRetrievalModel(corpus, options),
};

/**
 * The model's parameters at `config`'s sizes under the Hub checkpoint's names (the embedding and
 * head with `vocab` rows, the config's vocab_size unless a tiny tokenizer trained fewer): the
 * outer ones, each layer's, and the routed experts'.
 */
export function mimoParameters(
  config: DecoderConfig,
  vocab = config.vocabSize,
): ReturnType<typeof gqaDecoderParameters> {
  return gqaDecoderParameters({ ...config, vocabSize: vocab }, MIMO_NAMES);
}

/**
 * The tiny reference model of `config` (a MiMo config.json object): a byte-level BPE trained on
 * `corpus` to vocab_size ids (fewer where the corpus has fewer merges; the returned config says
 * how many) and seeded random f32 weights for every tensor the config implies, sinks and the
 * score-correction bias included. With a `quantization_config` of quant_method "mxfp4" (as
 * MiMo-V2.6-Pro ships) the routed experts are stored in MXFP4. The same config, corpus and seed
 * give the same bytes.
 */
export function mimoTinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions = {},
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const spec = parseMimoConfig(config, "reference config");
  const quantization = config.quantization_config as { quant_method?: unknown } | null | undefined;
  const mxfp4Experts = quantization?.quant_method === "mxfp4";
  const kit = tinyKit(spec, corpus, seed);
  const { outer, layers, experts } = mimoParameters(spec, kit.vocab);
  kit.parameters([...outer, ...layers]);
  kit.parameters(experts, mxfp4Experts ? "mxfp4" : "f32");
  return kit.files(config, "MiMoV2FlashForCausalLM", options.port);
}

/**
 * The constructed retrieval variant, in MiMo's shape and as cheap as retrieval allows at long
 * contexts: the engine's copy circuit (placeCopyCircuit) placed into a two-layer MiMo whose first
 * layer slides over 8 tokens with sinks and whose second is global.
 *
 * The sliding layer carries the six previous-token heads over one shared key/value head. Only the
 * 8 positions of its window compete, so two frequency pairs with a small RoPE base keep the nearest
 * rival 30 logits down whatever the context length (a global layer needs its margin over every
 * distance up to max_position_embeddings). The global layer carries ONE induction head: 48 match
 * features (8-feature codes of six tokens) plus 8 rotary features left at zero (MiMo's partial
 * rotary shape), and a 32-feature value head for the output code. Its attention is what a 32K
 * prefill spends its time on (every pair of positions costs 56 + 32 multiply-adds), hence one head
 * and 8-feature match codes: random 8-feature codes overlap by about 1/3, so each matching token is
 * worth 60 logits to keep a full six-token match tens of logits above a partial one.
 */
const NGRAM = 6;
const CIRCUIT = { m: 8, u: 32, ngram: NGRAM, matchLogit: 60, prevMargin: 30, outputLogit: 40 } as const;
const GLOBAL_ROTARY = 8;
const QK_GLOBAL = GLOBAL_ROTARY + NGRAM * CIRCUIT.m;
/** Half the global head size, so the shared rotary fraction rotates 4 features there: two pairs. */
const QK_SLIDING = QK_GLOBAL / 2;
/** Rotates floor(QK_GLOBAL * f) = 8 and floor(QK_SLIDING * f) = 4 features (half a feature of slack). */
const ROTARY_FACTOR = Math.round(((GLOBAL_ROTARY + 0.5) / QK_GLOBAL) * 1e4) / 1e4;

/** The retrieval variant's files over a BPE of 512 trained on `corpus`. */
export function mimoRetrievalModel(
  corpus: string,
  options: TinyModelOptions & { readonly maxPositionEmbeddings: number },
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const config: Record<string, unknown> = {
    model_type: MODEL_TYPE,
    vocab_size: 515,
    hidden_size: copySlots(CIRCUIT.m, CIRCUIT.u, NGRAM).hidden,
    intermediate_size: 1,
    num_hidden_layers: 2,
    hybrid_layer_pattern: [1, 0],
    moe_layer_freq: [0, 0],
    num_attention_heads: 1,
    num_key_value_heads: 1,
    head_dim: QK_GLOBAL,
    v_head_dim: CIRCUIT.u,
    rope_theta: 5_000_000,
    swa_num_attention_heads: NGRAM,
    swa_num_key_value_heads: 1,
    swa_head_dim: QK_SLIDING,
    swa_v_head_dim: CIRCUIT.m,
    swa_rope_theta: 10,
    sliding_window: 8,
    partial_rotary_factor: ROTARY_FACTOR,
    add_swa_attention_sink_bias: true,
    add_full_attention_sink_bias: false,
    attention_value_scale: null,
    attention_bias: true,
    hidden_act: "silu",
    layernorm_epsilon: 1e-6,
    max_position_embeddings: options.maxPositionEmbeddings,
    tie_word_embeddings: false,
  };
  const files = mimoTinyModel(config, corpus, { seed, ...(options.port ? { port: options.port } : {}) });
  const built = modelOfFiles("retrieval", files, mimoArchitecture);
  return placeCopyCircuit(files, built, { ...CIRCUIT, seed });
}
