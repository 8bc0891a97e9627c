/**
 * Muse Spark Open on the reference engine: grouped-query attention whose layers interleave a
 * sliding window with global (full) attention, and a latent mixture of experts with a norm on
 * every expert's output, its experts stored in MXFP4.
 *
 * Lineage (the design's reference/architectures.md): no single public model. The latent MoE is
 * Nemotron-H's (arXiv 2601.18089; vLLM `models/nemotron_h.py` `NemotronHMoE`), so its config.json
 * fields and tensor names are Nemotron-H's: `moe_latent_size`, `n_routed_experts`,
 * `num_experts_per_tok`, `moe_intermediate_size`, `moe_shared_expert_intermediate_size`, `n_group`,
 * `topk_group`, `norm_topk_prob`, `routed_scaling_factor`, `mlp_hidden_act` (relu2 only) and
 * `mlp_bias` (false only); the router `gate.weight` with `gate.e_score_correction_bias` (sigmoid
 * scores, as Nemotron-H routes), `fc1_latent_proj`, `fc2_latent_proj`, `experts.N.{up,down}_proj`
 * and `shared_experts.{up,down}_proj`. Nemotron-H's layers are Mamba, attention or MoE blocks under
 * `backbone.layers.N.mixer`; this model pairs attention and MoE in one pre-norm decoder layer, so
 * the layer skeleton takes HF's names (`model.layers.N.{input_layernorm, self_attn.*,
 * post_attention_layernorm, mlp.*}`) with the MoE's names under `mlp`, and the attention layers
 * read gpt-oss's `layer_types` and `sliding_window`, and MiMo-V2-Flash's `swa_num_attention_heads`
 * and `swa_num_key_value_heads` (the sliding layers' heads where they differ from the global ones'). The norm on every expert's output is the
 * port's own: `mlp.experts.N.output_norm.weight`, an RMSNorm at the latent width (epsilon
 * `rms_norm_eps`) after each expert's down projection and before the router weights combine them.
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
import { LatentMoe, type LatentMoeSpec, latentMoeParameters } from "../blocks/mlp/latent-moe.js";
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
} from "./config-fields.js";
import { embeddingParameters, layerPrefix, preNormDecoder, preNormParameters } from "./decoder.js";

export const MODEL_TYPE = "muse_spark";

const MuseSparkConfig = z.looseObject({
  model_type: z.literal(MODEL_TYPE),
  vocab_size: positive,
  hidden_size: positive,
  num_hidden_layers: positive,
  num_attention_heads: positive,
  num_key_value_heads: positive,
  swa_num_attention_heads: positive.nullish(),
  swa_num_key_value_heads: positive.nullish(),
  head_dim: positive,
  ...ROPE_FIELDS,
  partial_rotary_factor: z.number().gt(0).lte(1).default(1),
  attention_bias: z.boolean().default(false),
  layer_types: z.array(z.enum(["sliding_attention", "full_attention"])),
  sliding_window: positive,
  n_routed_experts: positive,
  num_experts_per_tok: positive,
  moe_intermediate_size: positive,
  moe_shared_expert_intermediate_size: z.number().int().nonnegative().default(0),
  moe_latent_size: positive,
  n_group: positive.default(1),
  topk_group: positive.default(1),
  norm_topk_prob: z.boolean().default(true),
  routed_scaling_factor: z.number().positive().default(1),
  mlp_hidden_act: z.literal("relu2").default("relu2"),
  mlp_bias: z.literal(false).default(false),
  rms_norm_eps: z.number().positive().default(1e-5),
  max_position_embeddings: positive,
  tie_word_embeddings: z.boolean().default(false),
  ...TOKEN_ID_FIELDS,
});

/** The engine's view of a Muse Spark Open config.json. */
export interface MuseSparkConfig extends ModelConfig {
  readonly rmsNormEps: number;
  readonly tieWordEmbeddings: boolean;
  readonly layers: readonly AttentionSpec[];
  readonly moe: LatentMoeSpec;
}

export function parseMuseSparkConfig(json: unknown, source = "config.json"): MuseSparkConfig {
  const { fields: c, fail } = parseConfigFields(MuseSparkConfig, json, source, "Muse Spark Open");
  const { theta: ropeTheta, partialRotaryFactor } = ropeConfig(c, fail, {
    defaultTheta: 10_000,
    partialRotaryFactor: c.partial_rotary_factor,
  });
  if (c.layer_types.length !== c.num_hidden_layers) {
    fail(
      "layer_types",
      `has ${c.layer_types.length} entries for ${c.num_hidden_layers} layers; give one per layer.`,
    );
  }
  if (!c.layer_types.includes("full_attention")) {
    fail(
      "layer_types",
      "has no full_attention layer; the global layers are what see past the sliding window.",
    );
  }
  if (c.sliding_window >= c.max_position_embeddings) {
    fail(
      "sliding_window",
      `${c.sliding_window} reaches max_position_embeddings ${c.max_position_embeddings}, so the global layers would see no further than the sliding ones; make the window shorter.`,
    );
  }
  const heads = (sliding: boolean) => ({
    numHeads: (sliding ? c.swa_num_attention_heads : undefined) ?? c.num_attention_heads,
    numKvHeads: (sliding ? c.swa_num_key_value_heads : undefined) ?? c.num_key_value_heads,
  });
  for (const [sliding, field] of [
    [false, "num_attention_heads"],
    [true, "swa_num_attention_heads"],
  ] as const) {
    const { numHeads, numKvHeads } = heads(sliding);
    if (numHeads % numKvHeads !== 0)
      fail(field, `${numHeads} is not a multiple of the ${numKvHeads} key/value heads of its layers.`);
  }
  if (c.moe_latent_size % 32 !== 0 || c.moe_intermediate_size % 32 !== 0) {
    fail(
      "moe_latent_size",
      `${c.moe_latent_size} and moe_intermediate_size ${c.moe_intermediate_size} must be multiples of 32: the MXFP4 experts read and write the latent in blocks of 32.`,
    );
  }
  const rotary = Math.round(c.head_dim * partialRotaryFactor);
  if (rotary % 2 !== 0)
    fail("partial_rotary_factor", `rotates ${rotary} features of each head; make it even.`);
  return {
    modelType: MODEL_TYPE,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    maxPositionEmbeddings: c.max_position_embeddings,
    rmsNormEps: c.rms_norm_eps,
    tieWordEmbeddings: c.tie_word_embeddings,
    layers: c.layer_types.map((t) => ({
      kind: t === "sliding_attention" ? "sliding" : "full",
      window: t === "sliding_attention" ? c.sliding_window : 0,
      ...heads(t === "sliding_attention"),
      headDim: c.head_dim,
      vHeadDim: c.head_dim,
      ropeTheta,
      partialRotaryFactor: rotary / c.head_dim,
      bias: c.attention_bias,
      qkNorm: false,
      sinks: false,
    })),
    moe: {
      routing: {
        numExperts: c.n_routed_experts,
        topK: c.num_experts_per_tok,
        intermediateSize: c.moe_intermediate_size,
        scoring: "sigmoid",
        normTopKProb: c.norm_topk_prob,
        routedScalingFactor: c.routed_scaling_factor,
        numGroups: c.n_group,
        topKGroups: c.topk_group,
      },
      latentSize: c.moe_latent_size,
      sharedIntermediateSize: c.moe_shared_expert_intermediate_size,
      expertNormEps: c.rms_norm_eps,
    },
    ...tokenIdConfig(c),
  };
}

/** Muse Spark Open from engine blocks: GQA attention of each layer's kind, then the latent MoE. */
export function buildMuseSpark(config: MuseSparkConfig, w: WeightSource): CausalLM {
  const H = config.hiddenSize;
  return preNormDecoder(w, { ...config, numLayers: config.layers.length }, (i, p) => ({
    mixer: GqaAttention.load(w, attentionNames(p), config.layers[i] as AttentionSpec, H, config.rmsNormEps),
    ffn: LatentMoe.load(w, `${p}.mlp`, config.moe, H),
  }));
}

/**
 * The tiny reference model of `config`: a BPE trained on `corpus` and seeded weights, every
 * parameter drawn in f32 from the blocks' declarations, the routed experts' matrices then stored
 * in MXFP4 (`weight_blocks` / `weight_scales`, the OCP encoder's scales and rounding), and a
 * score-correction bias of small draws.
 */
export function museSparkTinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions = {},
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const spec = parseMuseSparkConfig(config, "reference config");
  const kit = tinyKit(spec, corpus, seed);
  const H = spec.hiddenSize;
  kit.parameters(embeddingParameters({ ...spec, vocabSize: kit.vocab }));
  spec.layers.forEach((a, i) => {
    const p = layerPrefix(i);
    kit.parameters(preNormParameters(p, H));
    kit.parameters(gqaParameters(attentionNames(p), a, H));
    const { block, experts } = latentMoeParameters(`${p}.mlp`, spec.moe, H);
    kit.parameters(block);
    for (const { up, down, norm } of experts) {
      kit.parameters([up, down], "mxfp4");
      kit.parameters([norm]);
    }
  });
  return kit.files(config, "MuseSparkForCausalLM", options.port);
}

/**
 * The retrieval variant: the engine's copy circuit placed into a two-layer Muse Spark Open, a
 * sliding layer over 8 tokens carrying the six previous-token heads and a global layer of one head,
 * the induction head (one head, not six: the global layer's attention is what a 64K-token needle
 * prefill spends its time on), so retrieval at any distance rests on the global layer seeing past every
 * window; the latent MoE is silenced through fc2_latent_proj and the shared expert's down
 * projection. Only the window's distances compete in the sliding layer, so four rotary pairs with a small base keep the pick clear.
 */
// Output codes of 36 features make the residual 7·8 + 2·36 = 128 wide.
const CIRCUIT = { m: 8, u: 36, ngram: 6, matchLogit: 60, prevMargin: 30, outputLogit: 40 } as const;
const ROTARY = 8;
const HEAD = ROTARY + CIRCUIT.ngram * CIRCUIT.m;

export function museSparkRetrievalModel(
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
    num_attention_heads: 1,
    num_key_value_heads: 1,
    swa_num_attention_heads: CIRCUIT.ngram,
    swa_num_key_value_heads: 1,
    head_dim: HEAD,
    rope_theta: 10,
    partial_rotary_factor: ROTARY / HEAD,
    attention_bias: true,
    layer_types: ["sliding_attention", "full_attention"],
    sliding_window: 8,
    n_routed_experts: 2,
    num_experts_per_tok: 1,
    moe_intermediate_size: 32,
    moe_shared_expert_intermediate_size: 32,
    moe_latent_size: 32,
    rms_norm_eps: 1e-6,
    max_position_embeddings: options.maxPositionEmbeddings,
  };
  const files = museSparkTinyModel(config, corpus, options);
  const built = modelOfFiles("retrieval", files, museSparkArchitecture);
  return placeCopyCircuit(files, built, { ...CIRCUIT, seed });
}

export const museSparkArchitecture: Architecture<MuseSparkConfig> = {
  parseConfig: parseMuseSparkConfig,
  build: buildMuseSpark,
  states: (config) => config.layers.map(gqaStates),
  tinyModel: museSparkTinyModel,
  retrievalModel: (_config, corpus, options) => museSparkRetrievalModel(corpus, options),
};
