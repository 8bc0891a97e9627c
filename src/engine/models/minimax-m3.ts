/**
 * MiniMax-M3 on the reference engine: grouped-query attention alternating between a sliding window
 * with sink logits and full attention, and a mixture of experts with gpt-oss's clamped SwiGLU whose
 * experts are stored in MXFP4.
 *
 * Lineage (the design's reference/architectures.md): the MiniMax-M2 family with gpt-oss's
 * experts. config.json reads gpt-oss's fields (`layer_types`, `sliding_window`,
 * `num_local_experts`, `num_experts_per_tok`, `swiglu_limit`, `attention_bias`, `head_dim`,
 * `rope_theta`) and the tensors carry gpt-oss's checkpoint names: q/k/v/o_proj with biases,
 * `self_attn.sinks`, `mlp.router.{weight,bias}`, `mlp.experts.gate_up_proj_{blocks,scales,bias}`
 * and `mlp.experts.down_proj_{blocks,scales,bias}`. Sinks sit on the sliding layers only, as the
 * port's page describes the model; MiniMax-M2's q/k norm over the whole projection is not part of
 * this port's model code (the released MiniMax-M3 config does not enable it).
 *
 * A gpt-oss config.json (model_type gpt_oss) is read as gpt-oss defines it (HF
 * `models/gpt_oss/modeling_gpt_oss.py` GptOssAttention): sinks on every layer, an o_proj bias
 * beside q/k/v's when `attention_bias`, and YaRN `rope_scaling` with `truncate: false`.
 */
import { z } from "zod";
import type { Architecture, ModelConfig, TinyModelOptions } from "../architecture.js";
import {
  type AttentionSpec,
  attentionNames,
  GqaAttention,
  gqaParameters,
  gqaStates,
} from "../blocks/attention/gqa-attention.js";
import {
  type ClampedMoeSpec,
  ClampedSwigluMoe,
  clampedMoeParameters,
} from "../blocks/mlp/clamped-swiglu-moe.js";
import { declared, type ParameterDecl, type Parameters } from "../blocks/parameters.js";
import type { YarnScaling } from "../kernels/rope.js";
import { modelOfFiles } from "../loader/build-model.js";
import type { WeightSource } from "../loader/weight-source.js";
import type { CausalLM } from "../model/causal-lm.js";
import { copySlots } from "../tiny/copy-circuit.js";
import { placeCopyCircuit } from "../tiny/copy-circuit-placement.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { tinyKit } from "../tiny/port-kit.js";
import {
  parseConfigFields,
  positive,
  ROPE_FIELDS,
  ropeConfig,
  TOKEN_ID_FIELDS,
  tokenIdConfig,
  type UnreadFields,
} from "./config-fields.js";
import { embeddingParameters, layerPrefix, preNormDecoder, preNormParameters } from "./decoder.js";

export const MODEL_TYPE = "minimax_m3";
/** gpt-oss's own model type: the lineage's layers, with sinks and an o_proj bias on every layer. */
const GPT_OSS = "gpt_oss";

const MinimaxConfig = z.looseObject({
  model_type: z.enum([MODEL_TYPE, GPT_OSS]),
  vocab_size: positive,
  hidden_size: positive,
  num_hidden_layers: positive,
  num_attention_heads: positive,
  num_key_value_heads: positive,
  head_dim: positive,
  ...ROPE_FIELDS,
  partial_rotary_factor: z.number().gt(0).lte(1).default(1),
  // MiniMax-M2's spelling of the rotated features per head; checked against partial_rotary_factor.
  rotary_dim: positive.optional(),
  // MiniMax-M2's q/k norms over the whole projection are not in this family's code.
  use_qk_norm: z.literal(false).optional(),
  attention_bias: z.boolean().default(true),
  layer_types: z.array(z.enum(["sliding_attention", "full_attention"])),
  sliding_window: positive,
  num_local_experts: positive,
  num_experts_per_tok: positive,
  // gpt-oss's own name for num_experts_per_tok, which HF's config keeps beside it; checked equal.
  experts_per_token: positive.optional(),
  intermediate_size: positive,
  swiglu_limit: z.number().positive().default(7),
  // gpt-oss routes by softmax over the top-k router logits (with router.bias); MiniMax-M2's sigmoid
  // scores with a score-correction bias, and shared experts, are not in this family's code.
  scoring_func: z.literal("softmax").optional(),
  use_routing_bias: z.literal(false).optional(),
  shared_intermediate_size: z.literal(0).optional(),
  rms_norm_eps: z.number().positive().default(1e-5),
  max_position_embeddings: positive.default(131_072),
  tie_word_embeddings: z.boolean().default(false),
  ...TOKEN_ID_FIELDS,
});

/** The config.json fields this family reads (its schema's). */
export const MINIMAX_READ_FIELDS: readonly string[] = Object.keys(MinimaxConfig.shape);

/** Fields of the lineage's public configs (gpt-oss, MiniMax-M2) not read here, and why they do not matter. */
export const MINIMAX_UNREAD_FIELDS: UnreadFields = {
  hidden_act:
    "gpt-oss's experts apply the clamped SwiGLU (swiglu_limit) whatever it says, as HF's GptOssExperts do.",
  initial_context_length:
    "gpt-oss's pre-YaRN context; YaRN reads it from rope_scaling.original_max_position_embeddings (HF does not read it either).",
  quantization_config:
    "the loader reads MXFP4 (_blocks/_scales) or FP8 (weight_scale_inv) weights from the tensors themselves.",
  attn_type_list:
    "MiniMax-M2's attention kind per layer; this family reads gpt-oss's layer_types and refuses a config without them.",
  qk_norm_type: "how MiniMax-M2 shares its q/k norms; they are refused by use_qk_norm.",
  use_mtp: "multi-token prediction serves speculative decoding only.",
  num_mtp_modules: "multi-token prediction serves speculative decoding only.",
  mtp_transformer_layers: "multi-token prediction serves speculative decoding only.",
};

/** The engine's view of a MiniMax-M3 config.json. */
export interface MinimaxConfig extends ModelConfig {
  readonly rmsNormEps: number;
  /** YaRN scaling of every layer's RoPE (gpt-oss's rope_scaling). */
  readonly ropeScaling?: YarnScaling;
  readonly tieWordEmbeddings: boolean;
  readonly layers: readonly AttentionSpec[];
  readonly moe: ClampedMoeSpec;
}

/** gpt-oss's slope of the clamped SwiGLU's sigmoid. */
const SWIGLU_ALPHA = 1.702;

export function parseMinimaxConfig(json: unknown, source = "config.json"): MinimaxConfig {
  const { fields: c, fail } = parseConfigFields(MinimaxConfig, json, source, "MiniMax-M3");
  const {
    theta: ropeTheta,
    yarn,
    partialRotaryFactor,
  } = ropeConfig(c, fail, {
    defaultTheta: 150_000,
    yarn: { maxPositions: c.max_position_embeddings },
    partialRotaryFactor: c.partial_rotary_factor,
  });
  const gptOss = c.model_type === GPT_OSS;
  if (c.layer_types.length !== c.num_hidden_layers) {
    fail(
      "layer_types",
      `has ${c.layer_types.length} entries for ${c.num_hidden_layers} layers; give one per layer.`,
    );
  }
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    fail(
      "num_attention_heads",
      `${c.num_attention_heads} is not a multiple of num_key_value_heads ${c.num_key_value_heads}.`,
    );
  }
  if (c.experts_per_token !== undefined && c.experts_per_token !== c.num_experts_per_tok)
    fail(
      "experts_per_token",
      `${c.experts_per_token} disagrees with num_experts_per_tok ${c.num_experts_per_tok}; both name the experts each token uses.`,
    );
  if (c.num_experts_per_tok > c.num_local_experts) {
    fail("num_experts_per_tok", `${c.num_experts_per_tok} exceeds the ${c.num_local_experts} experts.`);
  }
  if (c.hidden_size % 32 !== 0 || c.intermediate_size % 32 !== 0) {
    fail("hidden_size", "MXFP4 experts need hidden_size and intermediate_size to be multiples of 32.");
  }
  const fraction = Math.round(c.head_dim * partialRotaryFactor);
  const rotary = c.rotary_dim ?? fraction;
  const fractionGiven =
    "partial_rotary_factor" in (json as object) || c.rope_parameters?.partial_rotary_factor !== undefined;
  if (c.rotary_dim !== undefined && fractionGiven && rotary !== fraction)
    fail(
      "rotary_dim",
      `${rotary} disagrees with partial_rotary_factor ${partialRotaryFactor} of head_dim ${c.head_dim}; make them agree.`,
    );
  if (rotary % 2 !== 0)
    fail("partial_rotary_factor", `rotates ${rotary} features of each head; make it even.`);
  return {
    modelType: c.model_type,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    maxPositionEmbeddings: c.max_position_embeddings,
    rmsNormEps: c.rms_norm_eps,
    tieWordEmbeddings: c.tie_word_embeddings,
    ...(yarn ? { ropeScaling: yarn } : {}),
    layers: c.layer_types.map((t) => ({
      kind: t === "sliding_attention" ? "sliding" : "full",
      window: t === "sliding_attention" ? c.sliding_window : 0,
      numHeads: c.num_attention_heads,
      numKvHeads: c.num_key_value_heads,
      headDim: c.head_dim,
      vHeadDim: c.head_dim,
      ropeTheta,
      partialRotaryFactor: rotary / c.head_dim,
      bias: c.attention_bias,
      outputBias: gptOss && c.attention_bias,
      qkNorm: false,
      sinks: gptOss || t === "sliding_attention",
    })),
    moe: {
      numExperts: c.num_local_experts,
      topK: c.num_experts_per_tok,
      intermediateSize: c.intermediate_size,
      limit: c.swiglu_limit,
      alpha: SWIGLU_ALPHA,
    },
    ...tokenIdConfig(c),
  };
}

/** MiniMax-M3 from engine blocks: GQA attention of each layer's kind, then gpt-oss's experts. */
export function buildMinimax(config: MinimaxConfig, w: WeightSource): CausalLM {
  const H = config.hiddenSize;
  return preNormDecoder(w, { ...config, numLayers: config.layers.length }, (i, p) => ({
    mixer: GqaAttention.load(
      w,
      attentionNames(p),
      config.layers[i] as AttentionSpec,
      H,
      config.rmsNormEps,
      config.ropeScaling,
    ),
    ffn: ClampedSwigluMoe.load(w, `${p}.mlp`, config.moe, H),
  }));
}

/**
 * The tiny reference model of `config`: a BPE trained on `corpus` and seeded weights, the experts
 * drawn in f32 and stored in MXFP4 (OCP encoding: scale floor(log2 amax) - 2, round to nearest even)
 * under gpt-oss's names, everything else in f32.
 */
/**
 * Every parameter of `spec`'s model under gpt-oss's names, in checkpoint order (with `vocab` ids in
 * place of the config's where given), the experts' stacked matrices marked as stored in MXFP4
 * (`<name>_blocks` and `<name>_scales`). A real-size config gives the real checkpoint's shapes.
 */
export function minimaxParameters(
  spec: MinimaxConfig,
  vocab = spec.vocabSize,
): { readonly decl: ParameterDecl; readonly mxfp4: boolean }[] {
  const out: { decl: ParameterDecl; mxfp4: boolean }[] = [];
  const add = (p: Parameters | readonly ParameterDecl[], mxfp4 = false) => {
    for (const decl of Array.isArray(p) ? (p as readonly ParameterDecl[]) : declared(p as Parameters))
      out.push({ decl, mxfp4 });
  };
  const H = spec.hiddenSize;
  add(embeddingParameters({ ...spec, vocabSize: vocab }));
  spec.layers.forEach((a, i) => {
    const p = layerPrefix(i);
    add(preNormParameters(p, H));
    add(gqaParameters(attentionNames(p), a, H));
    const { gateUp, down, ...rest } = clampedMoeParameters(`${p}.mlp`, spec.moe, H);
    add(rest);
    add([gateUp, down], true);
  });
  return out;
}

export function minimaxTinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions = {},
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const spec = parseMinimaxConfig(config, "reference config");
  const kit = tinyKit(spec, corpus, seed);
  for (const { decl, mxfp4 } of minimaxParameters(spec, kit.vocab))
    kit.parameters([decl], mxfp4 ? "mxfp4" : undefined);
  return kit.files(
    config,
    spec.modelType === GPT_OSS ? "GptOssForCausalLM" : "MiniMaxM3ForCausalLM",
    options.port,
  );
}

/**
 * The retrieval variant: the engine's copy circuit placed into a two-layer MiniMax-M3, a sliding
 * layer over 8 tokens (with sinks) carrying the six previous-token heads and a full layer carrying
 * the induction head; the experts are silenced through their down projections. Only the window's
 * distances compete in the sliding layer, so four rotary pairs with a small base keep the pick 30
 * logits clear at any context length.
 */
// Output codes of 36 features make the residual 7·8 + 2·36 = 128 wide, a multiple of MXFP4's 32.
const CIRCUIT = { m: 8, u: 36, ngram: 6, matchLogit: 60, prevMargin: 30, outputLogit: 40 } as const;
const ROTARY = 8;
const HEAD = ROTARY + CIRCUIT.ngram * CIRCUIT.m;

export function minimaxRetrievalModel(
  corpus: string,
  options: TinyModelOptions & { readonly maxPositionEmbeddings: number },
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const { hidden } = copySlots(CIRCUIT.m, CIRCUIT.u, CIRCUIT.ngram);
  const config: Record<string, unknown> = {
    model_type: MODEL_TYPE,
    vocab_size: 515,
    hidden_size: hidden,
    num_hidden_layers: 2,
    num_attention_heads: CIRCUIT.ngram,
    num_key_value_heads: 1,
    head_dim: HEAD,
    rope_theta: 10,
    partial_rotary_factor: ROTARY / HEAD,
    attention_bias: true,
    layer_types: ["sliding_attention", "full_attention"],
    sliding_window: 8,
    num_local_experts: 2,
    num_experts_per_tok: 1,
    intermediate_size: 32,
    rms_norm_eps: 1e-6,
    max_position_embeddings: options.maxPositionEmbeddings,
  };
  const files = minimaxTinyModel(config, corpus, options);
  const built = modelOfFiles("retrieval", files, minimaxArchitecture);
  return placeCopyCircuit(files, built, { ...CIRCUIT, seed });
}

export const minimaxArchitecture: Architecture<MinimaxConfig> = {
  parseConfig: parseMinimaxConfig,
  build: buildMinimax,
  states: (config) => config.layers.map(gqaStates),
  tinyModel: minimaxTinyModel,
  retrievalModel: (_config, corpus, options) => minimaxRetrievalModel(corpus, options),
};
