import { z } from "zod";
import type { Architecture, TinyModelOptions } from "../architecture.js";
import { type AttentionSpec, attentionNames } from "../blocks/attention/gqa-attention.js";
import { hasRouter, type MoeNames } from "../blocks/mlp/routed-moe.js";
import type { MoeSpec } from "../blocks/mlp/routing.js";
import { HF_MLP_NAMES, MIXTRAL_MLP_NAMES } from "../blocks/mlp/swiglu-mlp.js";
import type { ParameterDecl } from "../blocks/parameters.js";
import type { WeightSource } from "../loader/weight-source.js";
import type { CausalLM } from "../model/causal-lm.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { tinyKit } from "../tiny/port-kit.js";
import {
  type Fail,
  parseConfigFields,
  positive,
  ROPE_FIELDS,
  ropeConfig,
  TOKEN_ID_FIELDS,
  tokenIdConfig,
  type UnreadFields,
} from "./config-fields.js";
import {
  type DecoderConfig,
  decoderStates,
  gqaDecoder,
  gqaDecoderParameters,
  type LayerSpec,
} from "./decoder.js";

/**
 * The HF config.json fields the engine reads; others are ignored (LLAMA_UNREAD_FIELDS says why for
 * those of the lineage's public configs, models/public-configs.test.ts).
 */
const HfConfig = z.looseObject({
  model_type: z.string(),
  vocab_size: positive,
  hidden_size: positive,
  intermediate_size: positive.optional(),
  num_hidden_layers: positive,
  num_attention_heads: positive,
  num_key_value_heads: positive.optional(),
  head_dim: positive.nullish(),
  v_head_dim: positive.nullish(),
  rms_norm_eps: z.number().positive().default(1e-6),
  ...ROPE_FIELDS,
  partial_rotary_factor: z.number().gt(0).lte(1).default(1),
  max_position_embeddings: positive.default(4096),
  tie_word_embeddings: z.boolean().default(false),
  attention_bias: z.boolean().optional(),
  hidden_act: z.string().default("silu"),
  num_local_experts: positive.optional(),
  num_experts: positive.optional(),
  n_routed_experts: positive.optional(),
  num_experts_per_tok: positive.optional(),
  moe_intermediate_size: positive.optional(),
  norm_topk_prob: z.boolean().optional(),
  scoring_func: z.enum(["softmax", "sigmoid"]).optional(),
  routed_scaling_factor: z.number().positive().optional(),
  decoder_sparse_step: positive.optional(),
  mlp_only_layers: z.array(z.number().int().nonnegative()).optional(),
  sliding_window: positive.nullish(),
  layer_types: z.array(z.string()).nullish(),
  use_sliding_window: z.boolean().optional(),
  ...TOKEN_ID_FIELDS,
});

/** The config.json fields this family reads (its schema's). */
export const LLAMA_READ_FIELDS: readonly string[] = Object.keys(HfConfig.shape);

/** Fields of the lineage's public configs not read here, and why they do not matter. */
export const LLAMA_UNREAD_FIELDS: UnreadFields = {
  max_window_layers:
    "Qwen's first layer that slides when use_sliding_window is true; the family refuses that without layer_types, so no layer slides.",
};

/** Model types whose attention always has q/k/v biases. */
const BIAS_ALWAYS = new Set(["qwen2"]);
const QK_NORM = new Set(["qwen3", "qwen3_moe"]);
const SUPPORTED: ReadonlySet<string> = new Set([
  "llama",
  "mistral",
  "qwen2",
  "qwen3",
  "mixtral",
  "qwen3_moe",
]);

/** Parses a llama-family config.json object; `source` names the file in errors. */
export function parseLlamaConfig(json: unknown, source = "config.json"): DecoderConfig {
  const { fields: c, fail } = parseConfigFields(HfConfig, json, source, "llama-family");
  if (!SUPPORTED.has(c.model_type)) {
    fail(
      "model_type",
      `"${c.model_type}" is not supported by the reference engine (the llama family reads ${[...SUPPORTED].join(", ")}); add its family under src/engine/models/ (see src/engine/README.md).`,
    );
  }
  if (c.hidden_act !== "silu") fail("hidden_act", `"${c.hidden_act}" is not supported (only silu).`);
  const numHeads = c.num_attention_heads;
  const numKvHeads = c.num_key_value_heads ?? numHeads;
  if (numHeads % numKvHeads !== 0)
    fail("num_attention_heads", `${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}.`);
  const headDim = c.head_dim ?? c.hidden_size / numHeads;
  if (!Number.isInteger(headDim))
    fail(
      "hidden_size",
      `${c.hidden_size} is not divisible by num_attention_heads ${numHeads}; set head_dim.`,
    );
  const rope = ropeConfig(c, fail, {
    defaultTheta: 10000,
    yarn: { maxPositions: c.max_position_embeddings },
    partialRotaryFactor: c.partial_rotary_factor,
  });
  const rotary = Math.round(headDim * rope.partialRotaryFactor);
  if (rotary % 2 !== 0)
    fail("partial_rotary_factor", `the rotary part of each head (${rotary}) must be even.`);

  const numExperts = c.num_local_experts ?? c.num_experts ?? c.n_routed_experts;
  let moe: MoeSpec | undefined;
  if (numExperts !== undefined && numExperts > 0) {
    const topK =
      c.num_experts_per_tok ?? fail("num_experts_per_tok", "is required for a mixture of experts.");
    if (topK > numExperts) fail("num_experts_per_tok", `${topK} exceeds the ${numExperts} experts.`);
    moe = {
      numExperts,
      topK,
      intermediateSize:
        c.moe_intermediate_size ?? c.intermediate_size ?? fail("moe_intermediate_size", "is missing."),
      scoring: c.scoring_func ?? "softmax",
      // Mixtral renormalizes the top-k softmax; Qwen MoE says so in norm_topk_prob.
      normTopKProb: c.norm_topk_prob ?? c.model_type === "mixtral",
      routedScalingFactor: c.routed_scaling_factor ?? 1,
      numGroups: 1,
      topKGroups: 1,
    };
  }
  const intermediateSize =
    c.intermediate_size ?? moe?.intermediateSize ?? fail("intermediate_size", "is missing.");
  const kinds = layerKinds(c, fail);
  const attention: AttentionSpec = {
    kind: "full",
    window: 0,
    numHeads,
    numKvHeads,
    headDim,
    vHeadDim: c.v_head_dim ?? headDim,
    ropeTheta: rope.theta,
    partialRotaryFactor: rope.partialRotaryFactor,
    // Qwen2 always has q/k/v biases (its HF code ignores attention_bias); others say so in the config.
    bias: BIAS_ALWAYS.has(c.model_type) || (c.attention_bias ?? false),
    qkNorm: QK_NORM.has(c.model_type),
    sinks: false,
  };
  const sparseStep = c.decoder_sparse_step ?? 1;
  const denseOnly = new Set(c.mlp_only_layers ?? []);
  const layers: LayerSpec[] = [];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const isMoe = moe !== undefined && !denseOnly.has(i) && (i + 1) % sparseStep === 0;
    const layerAttention: AttentionSpec =
      kinds[i] === "sliding" ? { ...attention, kind: "sliding", window: c.sliding_window ?? 0 } : attention;
    layers.push({ attention: layerAttention, mlp: isMoe ? "moe" : "dense" });
  }
  return {
    modelType: c.model_type,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    intermediateSize,
    rmsNormEps: c.rms_norm_eps,
    maxPositionEmbeddings: c.max_position_embeddings,
    tieWordEmbeddings: c.tie_word_embeddings,
    ...(rope.yarn ? { ropeScaling: rope.yarn } : {}),
    ...(moe ? { moe } : {}),
    layers,
    ...tokenIdConfig(c),
  };
}

/**
 * Each layer's attention kind: from `layer_types` ("full_attention" / "sliding_attention", as
 * transformers writes it) where given, else every layer sliding for Mistral with a sliding_window.
 */
function layerKinds(
  c: {
    readonly model_type: string;
    readonly num_hidden_layers: number;
    readonly sliding_window?: number | null | undefined;
    readonly layer_types?: readonly string[] | null | undefined;
    readonly use_sliding_window?: boolean | undefined;
  },
  fail: Fail,
): ("full" | "sliding")[] {
  const n = c.num_hidden_layers;
  if (c.layer_types != null) {
    if (c.layer_types.length !== n)
      fail("layer_types", `has ${c.layer_types.length} entries for ${n} layers; give one per layer.`);
    return c.layer_types.map((t, i) => {
      if (t === "full_attention") return "full";
      if (t !== "sliding_attention")
        fail(`layer_types[${i}]`, `"${t}" is not supported (full_attention or sliding_attention).`);
      if (c.sliding_window == null)
        fail("sliding_window", `layer ${i} is sliding_attention but sliding_window is not set.`);
      return "sliding";
    });
  }
  if (c.model_type === "mistral" && c.sliding_window != null)
    return Array.from({ length: n }, () => "sliding");
  if (c.use_sliding_window === true)
    fail(
      "use_sliding_window",
      "without layer_types is not supported; list each layer's kind in layer_types.",
    );
  return Array.from({ length: n }, () => "full");
}

/** Where a llama-family MoE layer keeps its router and experts: Mixtral's `block_sparse_moe` (w1/w3/w2) or `mlp`. */
function moeNames(prefix: string, mixtral: boolean): MoeNames {
  return mixtral
    ? { base: `${prefix}.block_sparse_moe`, expert: MIXTRAL_MLP_NAMES }
    : { base: `${prefix}.mlp`, expert: HF_MLP_NAMES };
}

/**
 * Builds a llama-family model: GQA attention and a SwiGLU MLP or a mixture of experts in every
 * layer, with HF's names (Mixtral's experts under `block_sparse_moe` as w1/w3/w2).
 */
export function buildLlama(config: DecoderConfig, w: WeightSource): CausalLM {
  return gqaDecoder(config, w, {
    attention: (p) => attentionNames(p),
    moe: (p) => moeNames(p, hasRouter(w, moeNames(p, true))),
    correctionBias: false,
  });
}

/**
 * The parameters of a llama-family model of `config` (Mixtral's experts under its own names): the
 * embedding, final norm and head apart from the decoder layers', which a tiny model may quantize.
 */
export function llamaParameters(config: DecoderConfig): { outer: ParameterDecl[]; layers: ParameterDecl[] } {
  const mixtral = config.modelType === "mixtral";
  const { outer, layers, experts } = gqaDecoderParameters(config, {
    attention: (p) => attentionNames(p),
    moe: (p) => moeNames(p, mixtral),
    correctionBias: false,
  });
  return { outer, layers: [...layers, ...experts] };
}

/** The HF class name a llama-family config.json carries, by its model_type. */
const CLASS_NAMES: Readonly<Record<string, string>> = {
  llama: "LlamaForCausalLM",
  mistral: "MistralForCausalLM",
  qwen2: "Qwen2ForCausalLM",
  qwen3: "Qwen3ForCausalLM",
  mixtral: "MixtralForCausalLM",
  qwen3_moe: "Qwen3MoeForCausalLM",
};

/**
 * The tiny reference model of a llama-family `config` (a config.json object small enough for two
 * CPU cores): a BPE trained on `corpus` and the family's declared parameters drawn with a seed.
 */
export function llamaTinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions = {},
): TinyModelFiles {
  const spec = parseLlamaConfig(config, "reference config");
  const kit = tinyKit(spec, corpus, options.seed ?? 0);
  const { outer, layers } = llamaParameters({ ...spec, vocabSize: kit.vocab });
  kit.parameters([...outer, ...layers]);
  return kit.files(config, CLASS_NAMES[spec.modelType] ?? "LlamaForCausalLM", options.port);
}

/** The built-in llama / mistral / qwen2 / qwen3 / mixtral / qwen3_moe family. */
export const llamaArchitecture: Architecture<DecoderConfig> = {
  parseConfig: parseLlamaConfig,
  build: buildLlama,
  states: decoderStates,
  tinyModel: llamaTinyModel,
};
