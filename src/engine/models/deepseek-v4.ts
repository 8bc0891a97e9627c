/**
 * DeepSeek-V4 on the reference engine (DeepSeek-V4.1-Flash's lineage), after HF transformers
 * `models/deepseek_v4` (`configuration_deepseek_v4.py`, `modeling_deepseek_v4.py`): every layer
 * is V4 attention (blocks/attention/v4-attention.ts: a sliding window, plus compressed sparse or
 * heavily compressed rows by `layer_types`) and V4's mixture of experts (blocks/mlp/v4-moe.ts:
 * hash-routed in the first layers by `mlp_layer_types`), joined by mHC (blocks/residual/mhc*.ts).
 *
 * config.json fields read, in HF's spelling and the legacy one V4 checkpoints ship (folded in as
 * HF's `__post_init__` does): `layer_types` or `compress_ratios` (per layer: 0, or 1 as vLLM reads
 * it, sliding; else the layer's ratio); `compress_rates` or `compress_rate_csa` / `compress_rate_hca`; `mlp_layer_types`
 * or `num_hash_layers`; `partial_rotary_factor` or `qk_rope_head_dim`; `rope_theta` for sliding
 * layers, `compress_rope_theta` with `rope_scaling` (YaRN, attention factor 1 as HF forces) for the
 * others, or transformers v5's nested `rope_parameters`, key by key (models/deepseek-v4-rope.ts).
 * Known not to matter for inference: `initializer_range`, `attention_dropout`,
 * `router_aux_loss_coef`, `router_jitter_noise`, `output_router_logits`, `use_cache`,
 * `torch_dtype`. `num_nextn_predict_layers` counts the MTP layers; the first, `mtp.0.*`, is the
 * draft head (models/deepseek-v4-mtp.ts) when the checkpoint has it (HF's conversions drop it), its
 * attention kind entry num_hidden_layers of `layer_types` / `compress_ratios` (sliding when absent). Refused by name: a key-value head
 * count other than 1, attention or MLP biases, shared experts other than 1, an activation other
 * than silu, tied embeddings' absence of lm_head aside.
 *
 * Tensor names are transformers' (`model.layers.N.self_attn.*`, `.mlp.*`, `.attn_hc.*`,
 * `.ffn_hc.*`, `model.hc_head.*`, `model.embed_tokens`, `model.norm`, `lm_head`), or DeepSeek's own
 * as the released deepseek-ai checkpoints keep them (`layers.N.attn.wq_a.weight` with an FP8
 * `.scale`, `layers.N.ffn.experts.M.w1.weight` in FP4 per expert, `embed.weight`, `head.weight`),
 * told apart by the names and read onto transformers' by models/deepseek-v4-names.ts.
 */
import { z } from "zod";
import type { Architecture, ModelConfig, TinyModelOptions } from "../architecture.js";
import {
  V4_ATTENTION_SWITCH,
  V4Attention,
  type V4AttentionSpec,
  v4AttentionNames,
  v4AttentionParameters,
  v4AttentionStates,
} from "../blocks/attention/v4-attention.js";
import { V4Moe, type V4MoeSpec, v4MoeNames, v4MoeParameters } from "../blocks/mlp/v4-moe.js";
import { declared, type ParameterDecl, type Parameters } from "../blocks/parameters.js";
import type { MhcConfig } from "../blocks/residual/mhc.js";
import { modelOfFiles } from "../loader/build-model.js";
import type { WeightSource } from "../loader/weight-source.js";
import type { CausalLM } from "../model/causal-lm.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { tinyKit } from "../tiny/port-kit.js";
import { placeV4CopyCircuit, V4_CIRCUIT, v4CircuitAttention } from "../tiny/v4-copy-circuit.js";
import {
  type Fail,
  nonNegative,
  parseConfigFields,
  positive,
  TOKEN_ID_FIELDS,
  tokenIdConfig,
  type UnreadFields,
} from "./config-fields.js";
import { embeddingParameters, layerPrefix, mhcDecoder, mhcDecoderParameters } from "./decoder.js";
import { V4Mtp, v4MtpParameters } from "./deepseek-v4-mtp.js";
import { readV4Checkpoint } from "./deepseek-v4-names.js";
import { V4_ROPE_FIELDS, v4Rope } from "./deepseek-v4-rope.js";

export const MODEL_TYPE = "deepseek_v4";

const LAYER_TYPES = [
  "sliding_attention",
  "compressed_sparse_attention",
  "heavily_compressed_attention",
] as const;
const KIND_OF = {
  sliding_attention: "sliding",
  compressed_sparse_attention: "csa",
  heavily_compressed_attention: "hca",
} as const;
const LAYER_TYPE_OF = {
  sliding: "sliding_attention",
  csa: "compressed_sparse_attention",
  hca: "heavily_compressed_attention",
} as const;

/** The config.json fields this code reads; others are ignored (see the file's doc). */
const V4Fields = z.looseObject({
  model_type: z.literal(MODEL_TYPE),
  vocab_size: positive,
  hidden_size: positive,
  num_hidden_layers: positive,
  num_attention_heads: positive,
  num_key_value_heads: z.literal(1).default(1),
  head_dim: positive,
  q_lora_rank: positive,
  partial_rotary_factor: z.number().positive().max(1).nullish(),
  qk_rope_head_dim: nonNegative.nullish(),
  sliding_window: positive,
  o_groups: positive,
  o_lora_rank: positive,
  layer_types: z.array(z.enum(LAYER_TYPES)).nullish(),
  compress_ratios: z.array(nonNegative).nullish(),
  compress_rates: z
    .strictObject({ compressed_sparse_attention: positive, heavily_compressed_attention: positive })
    .nullish(),
  compress_rate_csa: positive.nullish(),
  compress_rate_hca: positive.nullish(),
  index_n_heads: positive,
  index_head_dim: positive,
  index_topk: positive,
  ...V4_ROPE_FIELDS,
  hc_mult: positive.default(4),
  hc_sinkhorn_iters: positive.default(20),
  hc_eps: z.number().positive().default(1e-6),
  n_routed_experts: positive,
  num_experts_per_tok: positive,
  n_shared_experts: z.literal(1).default(1),
  moe_intermediate_size: positive,
  scoring_func: z.literal("sqrtsoftplus").default("sqrtsoftplus"),
  // V4 routes with a score-correction bias and no groups, the only method its code has.
  topk_method: z.literal("noaux_tc").optional(),
  norm_topk_prob: z.boolean().default(true),
  routed_scaling_factor: z.number().positive().default(1.5),
  swiglu_limit: z.number().positive().default(10),
  mlp_layer_types: z.array(z.enum(["hash_moe", "moe"])).nullish(),
  num_hash_layers: nonNegative.nullish(),
  num_nextn_predict_layers: nonNegative.default(1),
  hidden_act: z.literal("silu").default("silu"),
  rms_norm_eps: z.number().positive().default(1e-6),
  max_position_embeddings: positive.default(1_048_576),
  tie_word_embeddings: z.boolean().default(false),
  attention_bias: z.literal(false).default(false),
  mlp_bias: z.literal(false).default(false),
  ...TOKEN_ID_FIELDS,
});

/** The config.json fields this family reads (its schema's). */
export const V4_READ_FIELDS: readonly string[] = Object.keys(V4Fields.shape);

/** Fields of the lineage's public configs not read here, and why they do not matter. */
export const V4_UNREAD_FIELDS: UnreadFields = {
  expert_dtype: "the experts' stored dtype; the loader reads each tensor's dtype from the checkpoint.",
  router_jitter_noise: "training only: noise on the router's logits, off at inference (HF's config field).",
  quantization_config:
    "the loader reads FP8 weights and their block scales from the tensors; the reference computes activations unquantized.",
  dspark_block_size: "the DSpark drafter's setting: speculative decoding only.",
  dspark_noise_token_id: "the DSpark drafter's setting: speculative decoding only.",
  dspark_target_layer_ids: "the DSpark drafter's setting: speculative decoding only.",
  dspark_markov_rank: "the DSpark drafter's setting: speculative decoding only.",
};

type V4Kind = "sliding" | "csa" | "hca";

/** One decoder layer's blocks. */
export interface V4LayerSpec {
  readonly attention: V4AttentionSpec;
  readonly moe: V4MoeSpec;
}

/** The engine's view of a DeepSeek-V4 config.json. */
export interface V4Config extends ModelConfig {
  readonly rmsNormEps: number;
  readonly tieWordEmbeddings: boolean;
  readonly mhc: MhcConfig;
  readonly layers: readonly V4LayerSpec[];
  /** MTP layers the checkpoint carries (`num_nextn_predict_layers`). */
  readonly mtpLayers: number;
  /** The MTP layer's blocks (models/deepseek-v4-mtp.ts). */
  readonly mtp: V4LayerSpec;
}

/** Parses a DeepSeek-V4 config.json; MODEL_CONFIG_INVALID names the field to fix. */
export function parseV4Config(json: unknown, source = "config.json"): V4Config {
  const { fields: c, fail } = parseConfigFields(V4Fields, json, source, "DeepSeek-V4");
  const L = c.num_hidden_layers;
  const rates = {
    csa: c.compress_rates?.compressed_sparse_attention ?? c.compress_rate_csa ?? 4,
    hca: c.compress_rates?.heavily_compressed_attention ?? c.compress_rate_hca ?? 128,
  };
  const kinds = layerKinds(c, rates, fail);
  const mlpTypes = c.mlp_layer_types ?? [];
  if (c.mlp_layer_types != null && mlpTypes.length < L)
    fail(
      "mlp_layer_types",
      `lists ${mlpTypes.length} layers but num_hidden_layers is ${L}; list every layer.`,
    );
  const hashLayers = c.num_hash_layers ?? 3;
  const ropeDim = c.qk_rope_head_dim ?? Math.round(c.head_dim * (c.partial_rotary_factor ?? 64 / 512));
  if (ropeDim % 2 !== 0 || ropeDim > c.head_dim)
    fail(
      "qk_rope_head_dim",
      `the rotated part (${ropeDim}) must be even and at most head_dim ${c.head_dim}.`,
    );
  const rope = v4Rope(c, fail, ropeDim, c.head_dim, c.max_position_embeddings);
  if (c.num_experts_per_tok > c.n_routed_experts)
    fail("num_experts_per_tok", `${c.num_experts_per_tok} exceeds the ${c.n_routed_experts} routed experts.`);
  const layerSpec = (k: V4Kind, hash: boolean): V4LayerSpec => {
    const attention: V4AttentionSpec = {
      kind: k,
      numHeads: c.num_attention_heads,
      headDim: c.head_dim,
      ropeDim,
      qLoraRank: c.q_lora_rank,
      window: c.sliding_window,
      oGroups: c.o_groups,
      oLoraRank: c.o_lora_rank,
      ropeTheta: k === "sliding" ? rope.mainTheta : rope.compressTheta,
      ...(k !== "sliding" && rope.yarn ? { yarn: rope.yarn } : {}),
      compressRatio: k === "sliding" ? 0 : rates[k],
      ...(k === "csa"
        ? { indexer: { numHeads: c.index_n_heads, headDim: c.index_head_dim, topK: c.index_topk } }
        : {}),
      normEps: c.rms_norm_eps,
    };
    const moe: V4MoeSpec = {
      routing: hash ? "hash" : "topk",
      numExperts: c.n_routed_experts,
      topK: c.num_experts_per_tok,
      intermediateSize: c.moe_intermediate_size,
      routedScalingFactor: c.routed_scaling_factor,
      normTopKProb: c.norm_topk_prob,
      swigluLimit: c.swiglu_limit,
      vocabSize: c.vocab_size,
    };
    return { attention, moe };
  };
  const layers = kinds.map((k, i) =>
    layerSpec(k, c.mlp_layer_types != null ? mlpTypes[i] === "hash_moe" : i < hashLayers),
  );
  // The MTP layer is layer num_hidden_layers of the legacy lists (sliding when they stop short);
  // it routes by top-k, as vLLM runs it without token ids.
  const mtpKind =
    c.layer_types?.[L] !== undefined
      ? KIND_OF[c.layer_types[L]]
      : c.compress_ratios?.[L] !== undefined
        ? kindOfRatio(c.compress_ratios[L], rates, `compress_ratios[${L}]`, fail)
        : "sliding";
  return {
    modelType: MODEL_TYPE,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    maxPositionEmbeddings: c.max_position_embeddings,
    rmsNormEps: c.rms_norm_eps,
    tieWordEmbeddings: c.tie_word_embeddings,
    mhc: { streams: c.hc_mult, sinkhornIters: c.hc_sinkhorn_iters, hcEps: c.hc_eps, normEps: c.rms_norm_eps },
    layers,
    mtpLayers: c.num_nextn_predict_layers,
    mtp: layerSpec(mtpKind, false),
    ...tokenIdConfig(c),
  };
}

/** Each layer's attention kind from `layer_types`, else legacy `compress_ratios`, else HF's default. */
function layerKinds(
  c: z.infer<typeof V4Fields>,
  rates: { readonly csa: number; readonly hca: number },
  fail: Fail,
): V4Kind[] {
  const L = c.num_hidden_layers;
  if (c.layer_types != null) {
    if (c.layer_types.length < L)
      fail(
        "layer_types",
        `lists ${c.layer_types.length} layers but num_hidden_layers is ${L}; list every layer.`,
      );
    return c.layer_types.slice(0, L).map((t) => KIND_OF[t]);
  }
  if (c.compress_ratios != null) {
    if (c.compress_ratios.length < L)
      fail("compress_ratios", `lists ${c.compress_ratios.length} layers but num_hidden_layers is ${L}.`);
    return c.compress_ratios.slice(0, L).map((r, i) => kindOfRatio(r, rates, `compress_ratios[${i}]`, fail));
  }
  // HF's default: two heavily compressed layers, then compressed sparse and heavily compressed alternating.
  return Array.from({ length: L }, (_, i) => (i < 2 || (i - 2) % 2 === 0 ? "hca" : "csa"));
}

/** A legacy `compress_ratios` entry's attention kind; `field` names the entry in the error. */
function kindOfRatio(
  r: number,
  rates: { readonly csa: number; readonly hca: number },
  field: string,
  fail: Fail,
): V4Kind {
  // HF maps 0 to a sliding layer; vLLM builds a compressor only for a ratio above 1.
  if (r <= 1) return "sliding";
  if (r === rates.csa) return "csa";
  if (r === rates.hca) return "hca";
  return fail(
    field,
    `${r} is neither 0 or 1 (sliding) nor the compressed sparse ratio ${rates.csa} nor the heavily compressed ratio ${rates.hca}.`,
  );
}

/** DeepSeek-V4 from engine blocks: V4 attention and V4 MoE in every layer, joined by mHC. */
export function buildV4(config: V4Config, checkpoint: WeightSource): CausalLM {
  return readV4Checkpoint(checkpoint, config, (w) => buildV4Model(config, w));
}

function buildV4Model(config: V4Config, w: WeightSource): CausalLM {
  const H = config.hiddenSize;
  const main = mhcDecoder(
    w,
    { ...config, numLayers: config.layers.length },
    (i, p) => {
      const layer = config.layers[i] as V4Config["layers"][number];
      return {
        mixer: V4Attention.load(w, v4AttentionNames(p), layer.attention, H),
        ffn: V4Moe.load(w, v4MoeNames(p), layer.moe, H),
      };
    },
    [V4_ATTENTION_SWITCH],
  );
  return main.withDrafter(V4Mtp.load(w, config, main));
}

/**
 * The main model's parameters at `config`'s sizes (the MTP layer's are v4MtpParameters'), each
 * with whether it is a routed-expert stack the checkpoint ships in MXFP4; each hash layer's table
 * has `vocab` rows (the config's vocab_size unless a tiny tokenizer trained fewer).
 */
export function v4Parameters(
  config: V4Config,
  vocab = config.vocabSize,
): { readonly decl: ParameterDecl; readonly mxfp4: boolean }[] {
  const H = config.hiddenSize;
  const out: { decl: ParameterDecl; mxfp4: boolean }[] = [];
  const add = (parameters: Parameters | readonly ParameterDecl[], mxfp4 = false) => {
    for (const decl of Array.isArray(parameters)
      ? (parameters as readonly ParameterDecl[])
      : declared(parameters as Parameters))
      out.push({ decl, mxfp4 });
  };
  add(embeddingParameters({ ...config, vocabSize: vocab }));
  add(mhcDecoderParameters(config.mhc, config.layers.length, H));
  config.layers.forEach((layer, i) => {
    const p = layerPrefix(i);
    add(v4AttentionParameters(v4AttentionNames(p), layer.attention, H));
    const { gateUp, down, ...rest } = v4MoeParameters(v4MoeNames(p), { ...layer.moe, vocabSize: vocab }, H);
    add(rest);
    add([gateUp, down], true);
  });
  return out;
}

/**
 * The tiny reference model of `config`: a byte-level BPE trained on `corpus` and seeded weights
 * from v4Parameters (each hash layer's table by tinyHashExpert, as I32), the experts in MXFP4 as
 * the checkpoint ships them. The same config, corpus and seed give the same bytes.
 */
export function v4TinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions = {},
): TinyModelFiles {
  const seed = options.seed ?? 0;
  const spec = parseV4Config(config, "reference config");
  const kit = tinyKit(spec, corpus, seed);
  for (const { decl, mxfp4 } of v4Parameters(spec, kit.vocab))
    kit.parameters([decl], mxfp4 ? "mxfp4" : undefined);
  if (spec.mtpLayers > 0) {
    const mtp = v4MtpParameters(spec, kit.vocab);
    kit.parameters(mtp.layer);
    kit.parameters(mtp.experts, "mxfp4");
  }
  return kit.files(config, "DeepseekV4ForCausalLM", options.port);
}

/**
 * The retrieval variant of `reference` (the port's tiny config): the engine's copy circuit in V4's
 * attention (tiny/v4-copy-circuit.ts) placed into the reference's layout (its layers, compression
 * rates, mHC streams and experts) at the circuit's widths, window and top-k
 * (v4CircuitAttention: the port's heads of 32 cannot hold a row of four positions' codes). The
 * first layer must be sliding and the second compressed sparse; the MTP layer is compressed sparse
 * too, so it drafts by the same copying. The other layers, the MoE and mHC's mixing are silenced.
 */
export function v4RetrievalModel(
  reference: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions & { readonly maxPositionEmbeddings: number },
): TinyModelFiles {
  const spec = parseV4Config(reference, "reference config");
  const config: Record<string, unknown> = {
    ...reference,
    ...v4CircuitAttention(),
    layer_types: [...spec.layers.map((l) => LAYER_TYPE_OF[l.attention.kind]), "compressed_sparse_attention"],
    compress_ratios: null,
    num_nextn_predict_layers: 1,
    max_position_embeddings: options.maxPositionEmbeddings,
    tie_word_embeddings: false,
  };
  const files = v4TinyModel(config, corpus, options);
  const built = modelOfFiles("retrieval", files, deepseekV4Architecture);
  return placeV4CopyCircuit(files, built, { ...V4_CIRCUIT, seed: options.seed ?? 0 });
}

export const deepseekV4Architecture: Architecture<V4Config> = {
  parseConfig: parseV4Config,
  build: buildV4,
  states: (config, switches) => config.layers.map((l) => v4AttentionStates(l.attention, switches)),
  ignoresTensor: (name) => /(^|\.)mtp\./.test(name),
  tinyModel: v4TinyModel,
  retrievalModel: v4RetrievalModel,
};
