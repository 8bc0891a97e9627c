/**
 * The DeepSeek-V3 layout that Kimi K2 and GLM-5 share (deepseek-ai/DeepSeek-V3 `inference/model.py`,
 * HF `DeepseekV3ForCausalLM`): multi-head latent attention in every layer (with DeepSeek sparse
 * attention's indexer where the config has `index_topk`), dense MLPs in the first
 * `first_k_dense_replace` layers, then a mixture of experts with sigmoid scores, a score-correction
 * bias, grouped top-k (noaux_tc) and shared experts. Ports parse their config.json with
 * `parseDeepseekV3`, build with `buildDeepseekV3`, and make their tiny weights with
 * `deepseekV3TinyTensors`. The RoPE base is read in every public spelling (`rope_theta`, or
 * `rope_parameters.rope_theta` as public GLM-5.x configs have it), and YaRN `rope_scaling` as
 * DeepSeek-V3 and Kimi K2 give it (beta_fast/slow, factor, mscale, mscale_all_dim): its
 * frequencies and cos/sin factor (HF `_compute_yarn_parameters`) and the softmax scale
 * mscale(factor, mscale_all_dim)^2 (HF `modeling_deepseek_v3.py`, vLLM `deepseek_v2.py`), applied
 * at every context length as HF and vLLM do; DeepSeek's `inference/model.py` applies it only when
 * its max_seq_len exceeds original_max_position_embeddings, which a served model's does.
 */
import { z } from "zod";
import type { Architecture, ModelConfig, TinyModelOptions } from "../architecture.js";
import {
  DSA_SWITCHES,
  DsaIndexer,
  type DsaSpec,
  dsaNames,
  dsaParameters,
} from "../blocks/attention/dsa-indexer.js";
import {
  MLA_CACHE_SWITCH,
  MLA_SWITCHES,
  MlaAttention,
  type MlaSpec,
  mlaNames,
  mlaParameters,
  mlaRopeSwitch,
  mlaStates,
} from "../blocks/attention/mla-attention.js";
import { SharedTopK } from "../blocks/attention/shared-top-k.js";
import {
  type MoeNames,
  RoutedMoe,
  routedMoeParameters,
  sharedExpertParameters,
} from "../blocks/mlp/routed-moe.js";
import { checkMoeSpec, type MoeSpec } from "../blocks/mlp/routing.js";
import { HF_MLP_NAMES, SwigluMlp, swigluParameters } from "../blocks/mlp/swiglu-mlp.js";
import { declared, type ParameterDecl, type Parameters } from "../blocks/parameters.js";
import type { LayerStates } from "../cache/state-spec.js";
import { modelOfFiles } from "../loader/build-model.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { WeightSource } from "../loader/weight-source.js";
import type { CausalLM } from "../model/causal-lm.js";
import { type TinyModelFiles, tinyModelFiles } from "../tiny/files.js";
import {
  LATENT_CIRCUIT,
  latentCircuitAttention,
  placeLatentCopyCircuit,
} from "../tiny/latent-copy-circuit.js";
import { tinyPortTokenizer } from "../tiny/port-kit.js";
import { putParameters, type TinyDtype } from "../tiny/weights.js";
import {
  type Fail,
  nonNegative,
  parseConfigFields,
  positive,
  ROPE_FIELDS,
  ropeConfig,
  TOKEN_ID_FIELDS,
  tokenIdConfig,
  type UnreadFields,
} from "./config-fields.js";
import { embeddingParameters, layerPrefix, preNormDecoder, preNormParameters } from "./decoder.js";

/** The model types this layout reads, by the name errors give their config.json, and the HF class tiny models name. */
const MODEL_TYPES: Readonly<Record<string, { readonly family: string; readonly architecture: string }>> = {
  deepseek_v3: { family: "DeepSeek-V3", architecture: "DeepseekV3ForCausalLM" },
  kimi_k2: { family: "Kimi K2", architecture: "DeepseekV3ForCausalLM" },
  glm_moe_dsa: { family: "GLM-5", architecture: "GlmMoeDsaForCausalLM" },
};

/** The config.json fields of the DeepSeek-V3 layout this code reads; others are ignored. */
const DEEPSEEK_V3_FIELDS = {
  vocab_size: positive,
  hidden_size: positive,
  intermediate_size: positive,
  num_hidden_layers: positive,
  num_attention_heads: positive,
  hidden_act: z.literal("silu").default("silu"),
  rms_norm_eps: z.number().positive().default(1e-6),
  max_position_embeddings: positive,
  tie_word_embeddings: z.boolean().default(false),
  attention_bias: z.literal(false).default(false),
  ...ROPE_FIELDS,
  q_lora_rank: nonNegative.nullish(),
  kv_lora_rank: positive,
  qk_nope_head_dim: positive,
  qk_rope_head_dim: positive,
  v_head_dim: positive,
  n_routed_experts: positive.nullish(),
  num_experts_per_tok: positive.nullish(),
  moe_intermediate_size: positive.nullish(),
  n_shared_experts: nonNegative.default(0),
  first_k_dense_replace: nonNegative.default(0),
  moe_layer_freq: positive.default(1),
  scoring_func: z.enum(["sigmoid", "softmax"]).default("sigmoid"),
  topk_method: z.enum(["noaux_tc", "greedy"]).default("noaux_tc"),
  n_group: positive.default(1),
  topk_group: positive.default(1),
  norm_topk_prob: z.boolean().default(true),
  routed_scaling_factor: z.number().positive().default(1),
  index_n_heads: positive.nullish(),
  index_head_dim: positive.nullish(),
  index_topk: z.number().int().nullish(),
  indexer_rope_interleave: z.boolean().default(false),
  indexer_types: z.array(z.enum(["full", "shared"])).nullish(),
  // MLA's RoPE pairing: adjacent features when true (DeepSeek's inference code, vLLM), half-split
  // when false. HF's glm_moe_dsa rotates half-split whatever this says; the engine follows the
  // config (the mla_rope switch's default) and --switch mla_rope=half-split reproduces HF.
  rope_interleave: z.boolean().default(true),
  // Only its FP8 scale format is read here; the loader reads the weights' quantization.
  quantization_config: z.looseObject({ scale_fmt: z.literal("ue8m0").nullish() }).nullish(),
  // Restatements of what the fields above give, checked against them (GLM-5's configs carry them).
  qk_head_dim: positive.nullish(),
  mlp_layer_types: z.array(z.enum(["dense", "sparse"])).nullish(),
  ...TOKEN_ID_FIELDS,
};

/** The config.json fields this layout reads (its schema's). */
export const DEEPSEEK_V3_READ_FIELDS: readonly string[] = ["model_type", ...Object.keys(DEEPSEEK_V3_FIELDS)];

/** Fields of the lineage's public configs this layout does not read, and why they do not matter. */
export const DEEPSEEK_V3_UNREAD_FIELDS: UnreadFields = {
  num_key_value_heads:
    "MLA has no separate key/value heads: HF sets it to num_attention_heads and every head reads the one latent.",
  head_dim: "HF's glm_moe_dsa sets it to qk_nope_head_dim; MLA's sizes come from the qk_*_head_dim fields.",
  num_nextn_predict_layers:
    "the multi-token-prediction layers serve speculative decoding only; their tensors are ignored (ignoresTensor).",
};

const DeepseekV3Fields = z.looseObject(DEEPSEEK_V3_FIELDS);
type DeepseekV3Fields = z.infer<typeof DeepseekV3Fields>;

/**
 * Parses a DeepSeek-V3-layout config.json (model_type deepseek_v3, kimi_k2 or glm_moe_dsa);
 * MODEL_CONFIG_INVALID names `source` and the field to fix.
 */
export function parseDeepseekV3(json: unknown, source = "config.json"): DeepseekV3Config {
  const modelType = (json as { model_type?: unknown } | null)?.model_type;
  const known = typeof modelType === "string" ? MODEL_TYPES[modelType] : undefined;
  const schema = z.looseObject({
    ...DEEPSEEK_V3_FIELDS,
    model_type: z.enum(Object.keys(MODEL_TYPES) as [string, ...string[]]),
  });
  const { fields, fail } = parseConfigFields(schema, json, source, known?.family ?? "DeepSeek-V3-layout");
  return deepseekV3Config(fields as DeepseekV3Fields, fields.model_type, fail);
}

/** The engine's view of a DeepSeek-V3-layout config. */
export interface DeepseekV3Config extends ModelConfig {
  readonly intermediateSize: number;
  readonly rmsNormEps: number;
  readonly tieWordEmbeddings: boolean;
  readonly mla: MlaSpec;
  /** DSA's indexer in every layer when the config has index_topk (but those sharedTopK marks). */
  readonly dsa?: DsaSpec;
  /**
   * Per layer, whether it runs no indexer and attends the previous layer's top-k (GLM's
   * `indexer_types` "shared"; HF glm_moe_dsa's skip_topk); all false without the field.
   */
  readonly sharedTopK: readonly boolean[];
  readonly moe?: MoeSpec;
  /** Width of the shared experts' one MLP (n_shared_experts x moe_intermediate_size); 0 for none. */
  readonly sharedIntermediateSize: number;
  readonly layers: readonly ("dense" | "moe")[];
}

function deepseekV3Config(c: DeepseekV3Fields, modelType: string, fail: Fail): DeepseekV3Config {
  const { theta: ropeTheta, yarn } = ropeConfig(c, fail, {
    defaultTheta: 10_000,
    yarn: { maxPositions: c.max_position_embeddings },
  });
  const mla: MlaSpec = {
    numHeads: c.num_attention_heads,
    qLoraRank: c.q_lora_rank ?? 0,
    kvLoraRank: c.kv_lora_rank,
    qkNopeHeadDim: c.qk_nope_head_dim,
    qkRopeHeadDim: c.qk_rope_head_dim,
    vHeadDim: c.v_head_dim,
    ropeTheta,
    ...(yarn ? { ropeScaling: yarn } : {}),
    ropeInterleave: c.rope_interleave,
  };
  if (mla.qkRopeHeadDim % 2 !== 0)
    fail("qk_rope_head_dim", `${mla.qkRopeHeadDim} must be even (RoPE rotates pairs).`);
  if (c.qk_head_dim != null && c.qk_head_dim !== mla.qkNopeHeadDim + mla.qkRopeHeadDim)
    fail(
      "qk_head_dim",
      `${c.qk_head_dim} is not qk_nope_head_dim + qk_rope_head_dim (${mla.qkNopeHeadDim + mla.qkRopeHeadDim}); fix whichever is wrong.`,
    );
  let dsa: DsaSpec | undefined;
  if (c.index_topk != null) {
    const topK = c.index_topk;
    if (topK < 1 || topK > c.max_position_embeddings) {
      fail(
        "index_topk",
        `${topK} must be between 1 and max_position_embeddings (${c.max_position_embeddings}); it is how many earlier tokens each query attends.`,
      );
    }
    const headDim = c.index_head_dim ?? fail("index_head_dim", "DSA's indexer needs its head size; set it.");
    if (!Number.isInteger(Math.log2(headDim)))
      fail("index_head_dim", `${headDim} must be a power of two (the indexer's Hadamard transform).`);
    if (mla.qLoraRank === 0)
      fail("q_lora_rank", "DSA's indexer reads MLA's query latent; set q_lora_rank above 0.");
    dsa = {
      numHeads: c.index_n_heads ?? fail("index_n_heads", "DSA's indexer needs its head count; set it."),
      headDim,
      ropeDim: mla.qkRopeHeadDim,
      ropeTheta,
      ...(yarn ? { ropeScaling: yarn } : {}),
      ropeInterleave: c.indexer_rope_interleave,
      fp8Scale: c.quantization_config?.scale_fmt === "ue8m0" ? "ue8m0" : "amax",
      topK,
    };
    if (dsa.ropeDim > headDim)
      fail(
        "index_head_dim",
        `${headDim} is smaller than the ${dsa.ropeDim} rotated features (qk_rope_head_dim).`,
      );
  }
  const sharedTopK = (c.indexer_types ?? []).map((t) => t === "shared");
  if (c.indexer_types != null) {
    if (dsa === undefined)
      fail(
        "indexer_types",
        "names DSA indexer layers, but the config has no index_topk; remove it or set index_topk.",
      );
    if (sharedTopK.length !== c.num_hidden_layers)
      fail(
        "indexer_types",
        `has ${sharedTopK.length} entries for ${c.num_hidden_layers} layers; give one per layer.`,
      );
    if (sharedTopK[0])
      fail("indexer_types", 'layer 0 is "shared", but there is no earlier layer whose top-k it could reuse.');
  }
  let moe: MoeSpec | undefined;
  if (c.n_routed_experts != null) {
    moe = {
      numExperts: c.n_routed_experts,
      topK:
        c.num_experts_per_tok ??
        fail("num_experts_per_tok", "a mixture of experts needs the experts per token."),
      intermediateSize:
        c.moe_intermediate_size ??
        fail("moe_intermediate_size", "a mixture of experts needs each expert's size."),
      scoring: c.scoring_func,
      normTopKProb: c.norm_topk_prob,
      routedScalingFactor: c.routed_scaling_factor,
      numGroups: c.topk_method === "noaux_tc" ? c.n_group : 1,
      topKGroups: c.topk_method === "noaux_tc" ? c.topk_group : 1,
    };
    try {
      checkMoeSpec(moe);
    } catch (error) {
      fail("n_group", (error as Error).message);
    }
  }
  const layers = Array.from({ length: c.num_hidden_layers }, (_, i) =>
    moe !== undefined && i >= c.first_k_dense_replace && i % c.moe_layer_freq === 0 ? "moe" : "dense",
  );
  const listed = c.mlp_layer_types?.map((t) => (t === "sparse" ? "moe" : "dense"));
  if (listed !== undefined && listed.join() !== layers.join())
    fail(
      "mlp_layer_types",
      `disagrees with first_k_dense_replace ${c.first_k_dense_replace}, moe_layer_freq ${c.moe_layer_freq} and n_routed_experts (layer ${layers.findIndex((t, i) => listed[i] !== t)} differs, of ${listed.length} listed for ${layers.length}); the engine places MoE layers from those fields.`,
    );
  return {
    modelType,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    maxPositionEmbeddings: c.max_position_embeddings,
    intermediateSize: c.intermediate_size,
    rmsNormEps: c.rms_norm_eps,
    tieWordEmbeddings: c.tie_word_embeddings,
    mla,
    ...(dsa ? { dsa } : {}),
    sharedTopK: sharedTopK.length > 0 ? sharedTopK : Array<boolean>(c.num_hidden_layers).fill(false),
    ...(moe ? { moe } : {}),
    sharedIntermediateSize: moe ? c.n_shared_experts * moe.intermediateSize : 0,
    layers,
    ...tokenIdConfig(c),
  };
}

/** Where a DeepSeek-V3 MoE layer keeps its router (with its score-correction bias) and routed experts. */
function moeNames(prefix: string): MoeNames {
  return { base: `${prefix}.mlp`, expert: HF_MLP_NAMES };
}

/** The model of a DeepSeek-V3-layout config over HF DeepSeek-V3's tensor names. */
export function buildDeepseekV3(config: DeepseekV3Config, w: WeightSource): CausalLM {
  const H = config.hiddenSize;
  const eps = config.rmsNormEps;
  const switches = [
    ...MLA_SWITCHES,
    mlaRopeSwitch(config.mla),
    ...(config.dsa ? DSA_SWITCHES : [MLA_CACHE_SWITCH]),
  ];
  const topK = config.sharedTopK.includes(true) ? new SharedTopK() : undefined;
  return preNormDecoder(
    w,
    { ...config, numLayers: config.layers.length },
    (i, p) => {
      const indexer =
        config.dsa && !config.sharedTopK[i]
          ? DsaIndexer.load(w, dsaNames(p), config.dsa, H, config.mla.qLoraRank)
          : undefined;
      const mixer = MlaAttention.load(w, mlaNames(p), config.mla, H, eps, indexer, topK);
      const moe = config.moe;
      if (config.layers[i] === "dense" || moe === undefined)
        return { mixer, ffn: SwigluMlp.load(w, `${p}.mlp`, H, config.intermediateSize) };
      return {
        mixer,
        ffn: RoutedMoe.loadWithShared(w, moeNames(p), moe, H, config.sharedIntermediateSize),
      };
    },
    switches,
  );
}

/**
 * What each layer keeps under `switches`: mla_cache=latent keeps the latent and shared rotary key
 * (kv_lora_rank + qk_rope_head_dim, plus DSA's index_head_dim of indexer keys), mla_cache=per-head
 * every head's key and value (heads x (qk_nope_head_dim + qk_rope_head_dim + v_head_dim)).
 */
export function deepseekV3States(
  config: DeepseekV3Config,
  switches: ReadonlyMap<string, string>,
): LayerStates[] {
  return config.layers.map((_, i) =>
    mlaStates(config.mla, config.sharedTopK[i] ? undefined : config.dsa, switches),
  );
}

/**
 * Every parameter of `config`'s model under HF DeepSeek-V3's names, in checkpoint order (with
 * `vocab` ids in place of the config's where given), each marked where it is a routed expert's.
 * Names and shapes come from the config alone: a real-size config gives the real checkpoint's.
 */
export function deepseekV3Parameters(
  config: DeepseekV3Config,
  vocab = config.vocabSize,
): { readonly decl: ParameterDecl; readonly routedExpert: boolean }[] {
  const out: { decl: ParameterDecl; routedExpert: boolean }[] = [];
  const add = (parameters: Parameters | readonly ParameterDecl[], routedExpert = false) => {
    const list = Array.isArray(parameters)
      ? (parameters as readonly ParameterDecl[])
      : declared(parameters as Parameters);
    for (const decl of list) out.push({ decl, routedExpert });
  };
  const H = config.hiddenSize;
  add(embeddingParameters({ ...config, vocabSize: vocab }));
  config.layers.forEach((kind, i) => {
    const p = layerPrefix(i);
    add(preNormParameters(p, H));
    add(mlaParameters(mlaNames(p), config.mla, H));
    if (config.dsa && !config.sharedTopK[i])
      add(dsaParameters(dsaNames(p), config.dsa, H, config.mla.qLoraRank));
    const moe = config.moe;
    if (kind === "moe" && moe !== undefined) {
      const { router, experts } = routedMoeParameters(moeNames(p), moe, H, {
        correctionBias: true,
        biasSeedOfGate: true,
      });
      add(router);
      add(experts, true);
      if (config.sharedIntermediateSize > 0)
        add(sharedExpertParameters(moeNames(p), H, config.sharedIntermediateSize));
    } else add(swigluParameters(`${p}.mlp`, H, config.intermediateSize));
  });
  return out;
}

/**
 * Seeded random tensors for every weight `config` implies (deepseekV3Parameters): matrices scaled
 * by fan-in, norms one, the indexer's LayerNorm bias zero, a small score-correction bias. With
 * `mxfp4Experts` the routed experts' matrices are stored as MXFP4 (`.weight_blocks` and
 * `.weight_scales`, encoded by formats' encodeMxfp4), as the published checkpoints hold them.
 */
function deepseekV3TinyTensors(
  config: DeepseekV3Config,
  vocab: number,
  seed: number,
  options: { readonly mxfp4Experts?: boolean } = {},
): Map<string, HostTensor> {
  const tensors = new Map<string, HostTensor>();
  for (const { decl, routedExpert } of deepseekV3Parameters(config, vocab)) {
    const storage: TinyDtype = routedExpert && options.mxfp4Experts ? "mxfp4" : "f32";
    putParameters(tensors, seed, [decl], { storage });
  }
  return tensors;
}

/**
 * The tiny reference model of `config` (a config.json object): a byte-level BPE trained on
 * `corpus` to vocab_size ids and deepseekV3TinyTensors' weights, routed experts in MXFP4 as the
 * published checkpoints hold them. Same inputs, same bytes.
 */
function deepseekV3TinyModel(
  config: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions = {},
): TinyModelFiles {
  const spec = parseDeepseekV3(config, "reference config");
  const seed = options.seed ?? 0;
  const tok = tinyPortTokenizer(spec, corpus);
  return tinyModelFiles(
    {
      ...config,
      architectures: [(MODEL_TYPES[spec.modelType] as { architecture: string }).architecture],
      vocab_size: tok.vocab,
      bos_token_id: null,
      eos_token_id: tok.eos,
      torch_dtype: "float32",
      quantization_config: {
        quant_method: "mxfp4",
        modules_to_not_convert: ["self_attn", "shared_experts", "mlp.gate", "lm_head"],
      },
      bringup_tiny: { ...(options.port !== undefined ? { port: options.port } : {}), seed },
    },
    tok,
    deepseekV3TinyTensors(spec, tok.vocab, seed, { mxfp4Experts: true }),
  );
}

/** Tokens each query attends in the retrieval variant: far fewer than the needle gate's contexts. */
export const RETRIEVAL_TOP_K = 32;

/**
 * The retrieval variant of a config with DSA's indexer (none without one): the engine's copy
 * circuit placed in latent-attention terms (tiny/latent-copy-circuit.ts) into two MLA + DSA layers
 * (dense MLPs, silenced) whose indexers' top-k is far below the context, so the indexer itself must
 * find the needle for it to be copied; layers sized by latentCircuitAttention, indexers of 8 heads
 * of 64.
 */
function dsaRetrievalModel(
  reference: Record<string, unknown>,
  corpus: string,
  options: TinyModelOptions & { readonly maxPositionEmbeddings: number },
): TinyModelFiles | undefined {
  if (reference.index_topk == null) return undefined;
  const seed = options.seed ?? 0;
  const config: Record<string, unknown> = {
    model_type: reference.model_type,
    vocab_size: 515,
    ...latentCircuitAttention(),
    intermediate_size: 1,
    num_hidden_layers: 2,
    index_n_heads: 8,
    index_head_dim: 64,
    index_topk: RETRIEVAL_TOP_K,
    rms_norm_eps: 1e-6,
    max_position_embeddings: options.maxPositionEmbeddings,
    tie_word_embeddings: false,
  };
  const files = deepseekV3TinyModel(config, corpus, options);
  const built = modelOfFiles("retrieval", files, deepseekV3Architecture);
  return placeLatentCopyCircuit(files, built, { ...LATENT_CIRCUIT, seed });
}

/**
 * The DeepSeek-V3 layout's model code, for DeepSeek-V3, Kimi K2 and GLM-5 config.json files.
 * The `mla_cache` switch keeps every head's key and value instead of the latent (an engine
 * without MLA support): `states` gives both from the config.
 */
/**
 * Whether `name` is a tensor of the multi-token-prediction layers the checkpoint appends after
 * `config`'s layers (`model.layers.<num_hidden_layers + k>.*`, num_nextn_predict_layers of them),
 * which serve speculative decoding only: HF's DeepSeek-V3 skips them on load the same way.
 */
function isMtpTensor(name: string, config: DeepseekV3Config): boolean {
  const layer = /^model\.layers\.(\d+)\./.exec(name)?.[1];
  return layer !== undefined && Number(layer) >= config.layers.length;
}

/**
 * Whether `name` is an indexer tensor of a layer indexer_types marks "shared": HF's glm_moe_dsa
 * builds an indexer in every layer but a shared one never runs it, so a checkpoint may carry it
 * unused; the engine reads none there.
 */
function isSharedIndexerTensor(name: string, config: DeepseekV3Config): boolean {
  const layer = /^model\.layers\.(\d+)\.self_attn\.indexer\./.exec(name)?.[1];
  return layer !== undefined && config.sharedTopK[Number(layer)] === true;
}

export const deepseekV3Architecture: Architecture<DeepseekV3Config> = {
  parseConfig: parseDeepseekV3,
  build: buildDeepseekV3,
  ignoresTensor: (name, config) => isMtpTensor(name, config) || isSharedIndexerTensor(name, config),
  states: deepseekV3States,
  tinyModel: deepseekV3TinyModel,
  retrievalModel: dsaRetrievalModel,
};
