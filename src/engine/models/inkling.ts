/**
 * Inkling-Small on the reference engine: attention with no rotary embedding, positions entering
 * only through a learned logit per head and relative-distance bucket (T5's relative attention
 * bias), short causal convolutions over the keys and values whose tails are kept per sequence, and
 * a mixture of SwiGLU experts in every layer.
 *
 * Lineage (the design's reference/architectures.md): no public model is named. The names follow
 * public work where it has them: T5's `relative_attention_num_buckets`,
 * `relative_attention_max_distance` and `relative_attention_bias` (HF `modeling_t5.py`, causal
 * buckets); the public Inkling code's `sconv_kernel_size`, `k_sconv`, `v_sconv`,
 * `n_routed_experts`, `n_shared_experts`, `moe_intermediate_size` and `route_scale`; HF's decoder
 * layout for the rest (`input_layernorm`, `post_attention_layernorm`, `mlp.gate`,
 * `mlp.experts.N.{gate,up,down}_proj`). The router follows the public Inkling contract: sigmoid
 * scores, the top-k renormalized, times route_scale.
 *
 * Fields known not to matter: `intermediate_size` (every layer here is MoE, so no dense MLP reads
 * it). Refused: `n_shared_experts` other than 0 (the port's model has no shared experts), and any
 * `rope_theta` / `rope_scaling` (this family has no rotary embedding; a config asking for one is
 * not this model).
 */
import { z } from "zod";
import type { Architecture, ModelConfig, TinyModelOptions } from "../architecture.js";
import {
  type RelativeAttentionSpec,
  RelativeBiasAttention,
  relativeAttentionNames,
  relativeAttentionParameters,
  relativeAttentionStates,
} from "../blocks/attention/relative-bias-attention.js";
import { type MoeNames, RoutedMoe, routedMoeParameters } from "../blocks/mlp/routed-moe.js";
import type { MoeSpec } from "../blocks/mlp/routing.js";
import { HF_MLP_NAMES } from "../blocks/mlp/swiglu-mlp.js";
import { modelOfFiles } from "../loader/build-model.js";
import type { WeightSource } from "../loader/weight-source.js";
import type { CausalLM } from "../model/causal-lm.js";
import { copySlots } from "../tiny/copy-circuit.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { tinyKit } from "../tiny/port-kit.js";
import { placeRelativeCopyCircuit } from "../tiny/relative-copy-circuit.js";
import { parseConfigFields, positive, TOKEN_ID_FIELDS, tokenIdConfig } from "./config-fields.js";
import { embeddingParameters, layerPrefix, preNormDecoder, preNormParameters } from "./decoder.js";

export const MODEL_TYPE = "inkling";

const InklingConfig = z.looseObject({
  model_type: z.literal(MODEL_TYPE),
  vocab_size: positive,
  hidden_size: positive,
  num_hidden_layers: positive,
  num_attention_heads: positive,
  num_key_value_heads: positive,
  head_dim: positive,
  relative_attention_num_buckets: z.number().int().min(2),
  relative_attention_max_distance: positive,
  sconv_kernel_size: positive,
  n_routed_experts: positive,
  num_experts_per_tok: positive,
  n_shared_experts: z.literal(0).default(0),
  moe_intermediate_size: positive,
  route_scale: z.number().positive().default(1),
  rope_theta: z.never({ error: "this family has no rotary embedding; remove the field" }).optional(),
  rope_scaling: z.never({ error: "this family has no rotary embedding; remove the field" }).optional(),
  rms_norm_eps: z.number().positive().default(1e-6),
  max_position_embeddings: positive.default(262_144),
  tie_word_embeddings: z.boolean().default(false),
  ...TOKEN_ID_FIELDS,
});

/** The engine's view of an Inkling config.json. */
export interface InklingConfig extends ModelConfig {
  readonly numLayers: number;
  readonly rmsNormEps: number;
  readonly tieWordEmbeddings: boolean;
  readonly attention: RelativeAttentionSpec;
  readonly moe: MoeSpec;
}

export function parseInklingConfig(json: unknown, source = "config.json"): InklingConfig {
  const { fields: c, fail } = parseConfigFields(InklingConfig, json, source, "Inkling");
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    fail(
      "num_attention_heads",
      `${c.num_attention_heads} is not a multiple of num_key_value_heads ${c.num_key_value_heads}.`,
    );
  }
  const exact = Math.floor(c.relative_attention_num_buckets / 2);
  if (c.relative_attention_max_distance <= exact) {
    fail(
      "relative_attention_max_distance",
      `${c.relative_attention_max_distance} must exceed relative_attention_num_buckets / 2 = ${exact} (the distances with a bucket each).`,
    );
  }
  if (c.relative_attention_max_distance > c.max_position_embeddings) {
    fail(
      "relative_attention_max_distance",
      `${c.relative_attention_max_distance} exceeds max_position_embeddings ${c.max_position_embeddings}; no two positions are that far apart.`,
    );
  }
  if (c.num_experts_per_tok > c.n_routed_experts) {
    fail("num_experts_per_tok", `${c.num_experts_per_tok} exceeds the ${c.n_routed_experts} experts.`);
  }
  return {
    modelType: MODEL_TYPE,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    maxPositionEmbeddings: c.max_position_embeddings,
    numLayers: c.num_hidden_layers,
    rmsNormEps: c.rms_norm_eps,
    tieWordEmbeddings: c.tie_word_embeddings,
    attention: {
      numHeads: c.num_attention_heads,
      numKvHeads: c.num_key_value_heads,
      headDim: c.head_dim,
      numBuckets: c.relative_attention_num_buckets,
      maxDistance: c.relative_attention_max_distance,
      convKernel: c.sconv_kernel_size,
    },
    moe: {
      numExperts: c.n_routed_experts,
      topK: c.num_experts_per_tok,
      intermediateSize: c.moe_intermediate_size,
      scoring: "sigmoid",
      normTopKProb: true,
      routedScalingFactor: c.route_scale,
      numGroups: 1,
      topKGroups: 1,
    },
    ...tokenIdConfig(c),
  };
}

/** Inkling from engine blocks: relative-bias attention with key/value convolutions, then routed experts. */
export function buildInkling(config: InklingConfig, w: WeightSource): CausalLM {
  const H = config.hiddenSize;
  return preNormDecoder(w, config, (_i, p) => ({
    mixer: RelativeBiasAttention.load(w, relativeAttentionNames(p), config.attention, H),
    ffn: RoutedMoe.load(w, moeNames(p), config.moe, H),
  }));
}

/** The experts of the layer at `prefix`, under HF's names. */
function moeNames(prefix: string): MoeNames {
  return { base: `${prefix}.mlp`, expert: HF_MLP_NAMES };
}

/** The tiny reference model of `config`: a BPE trained on `corpus` and seeded f32 weights. */
export function inklingTinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions = {},
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const spec = parseInklingConfig(config, "reference config");
  const kit = tinyKit(spec, corpus, seed);
  const H = spec.hiddenSize;
  kit.parameters(embeddingParameters({ ...spec, vocabSize: kit.vocab }));
  for (let i = 0; i < spec.numLayers; i++) {
    const p = layerPrefix(i);
    kit.parameters(preNormParameters(p, H));
    kit.parameters(relativeAttentionParameters(relativeAttentionNames(p), spec.attention, H));
    const { router, experts } = routedMoeParameters(moeNames(p), spec.moe, H);
    kit.parameters(router);
    kit.parameters(experts);
  }
  return kit.files(config, "InklingForCausalLM", options.port);
}

/** The retrieval circuit's sizes (see tiny/relative-copy-circuit.ts): 8 + 32 + 6·8 + 32 = 120 wide. */
const CIRCUIT = { m: 8, u: 32, ngram: 6, matchLogit: 60, prevMargin: 30, outputLogit: 40 } as const;

/**
 * The retrieval variant: two layers of the family carrying the relative-bias copy circuit, with
 * 16 buckets up to distance 32 (distances 1..7 a bucket each, enough for the six previous-token
 * heads) and four-tap convolutions; the experts are silenced through their down projections.
 */
export function inklingRetrievalModel(
  corpus: string,
  options: TinyModelOptions & { readonly maxPositionEmbeddings: number },
): TinyModelFiles {
  const config: Record<string, unknown> = {
    model_type: MODEL_TYPE,
    vocab_size: 515,
    hidden_size: copySlots(CIRCUIT.m, CIRCUIT.u, CIRCUIT.ngram).hidden,
    num_hidden_layers: 2,
    num_attention_heads: CIRCUIT.ngram,
    num_key_value_heads: 1,
    head_dim: CIRCUIT.ngram * CIRCUIT.m,
    relative_attention_num_buckets: 16,
    relative_attention_max_distance: 32,
    sconv_kernel_size: 4,
    n_routed_experts: 2,
    num_experts_per_tok: 1,
    moe_intermediate_size: 8,
    rms_norm_eps: 1e-6,
    max_position_embeddings: options.maxPositionEmbeddings,
  };
  const files = inklingTinyModel(config, corpus, options);
  const built = modelOfFiles("retrieval", files, inklingArchitecture);
  return placeRelativeCopyCircuit(files, built, { ...CIRCUIT, seed: options.seed ?? 0 });
}

export const inklingArchitecture: Architecture<InklingConfig> = {
  parseConfig: parseInklingConfig,
  build: buildInkling,
  states: (config) =>
    Array.from({ length: config.numLayers }, () => relativeAttentionStates(config.attention)),
  tinyModel: inklingTinyModel,
  retrievalModel: (_config, corpus, options) => inklingRetrievalModel(corpus, options),
};
