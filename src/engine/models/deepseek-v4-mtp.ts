/**
 * DeepSeek-V4's multi-token prediction layer as a draft head, after vLLM
 * `models/deepseek_v4/.../mtp.py` (`DeepSeekV4MultiTokenPredictorLayer`): at position p,
 *
 *   e = enorm(embed(t[p+1]))          (zero at position 0, as vLLM masks it)
 *   X_i = h_proj(hnorm(H_i)) + e_proj(e)   for each of the main model's mHC streams H_i at p
 *   X = one V4 decoder layer (attention of the layer's kind, top-k MoE, both joined by mHC)
 *   logits = lm_head(norm(hc_head(X)))     (the head's own hyper head and norm, the shared lm_head)
 *
 * and X is the previous stream of a further draft step. Names are DeepSeek's `mtp.0.{e_proj,
 * h_proj, enorm, hnorm, norm, hc_head_fn, hc_head_base, hc_head_scale}`; the decoder layer inside
 * uses the layer names transformers gives the main layers (`self_attn.*`, `mlp.*`, `attn_hc.*`,
 * `ffn_hc.*`, `input_layernorm`, `post_attention_layernorm`) under `mtp.0.`, as the main model
 * reads transformers' names (HF drops the MTP layer, so it has no names of its own for it).
 */
import {
  V4Attention,
  type V4AttentionSpec,
  v4AttentionNames,
  v4AttentionParameters,
  v4AttentionStates,
} from "../blocks/attention/v4-attention.js";
import { V4Moe, type V4MoeSpec, v4MoeNames, v4MoeParameters } from "../blocks/mlp/v4-moe.js";
import { bindParameters, declared, f32Param, matrixParam, type ParameterDecl } from "../blocks/parameters.js";
import type { MhcConfig } from "../blocks/residual/mhc.js";
import {
  MhcConnection,
  MhcResidual,
  mhcHeadParameters,
  mhcSiteParameters,
} from "../blocks/residual/mhc-connection.js";
import type { LayerStates } from "../cache/state-spec.js";
import type { LayerStorage } from "../cache/storage.js";
import { embed } from "../kernels/embedding.js";
import { rmsNorm } from "../kernels/rmsnorm.js";
import type { WeightSource } from "../loader/weight-source.js";
import { type CausalLM, headLogits, type NoDrafter } from "../model/causal-lm.js";
import type { DraftModel } from "../model/draft-model.js";
import type { ForwardContext, StepResult } from "../model/model.js";
import type { Weight } from "../tensor/weight.js";
import { mhcSites, preNormParameters } from "./decoder.js";

/** What the MTP layer reads of a DeepSeek-V4 config (models/deepseek-v4.ts V4Config). */
export interface V4MtpConfig {
  readonly hiddenSize: number;
  readonly rmsNormEps: number;
  readonly mhc: MhcConfig;
  /** `num_nextn_predict_layers`. */
  readonly mtpLayers: number;
  readonly mtp: { readonly attention: V4AttentionSpec; readonly moe: V4MoeSpec };
}

/** The prefix of the (only) MTP layer the engine drafts with. */
export const MTP_PREFIX = "mtp.0";

/** The prefix of the MTP layer's hyper head's tensors. */
const MTP_HC_HEAD = `${MTP_PREFIX}.hc_head_`;

/**
 * The names of the head's own tensors and its hyper head's, the same in DeepSeek's naming and the
 * engine's (models/deepseek-v4-names.ts), with whether each is a linear (FP8 with a `.scale` in
 * DeepSeek's release).
 */
export function v4MtpHeadNames(config: V4MtpConfig): { readonly name: string; readonly linear: boolean }[] {
  return [
    ...declared(mtpHeadParameters(config)),
    ...declared(mhcHeadParameters(config.mhc, config.hiddenSize, MTP_HC_HEAD)),
  ].map((d) => ({ name: d.name, linear: d.dtype === "matrix" }));
}

/** The head's own tensors, beside its decoder layer's. */
export function mtpHeadParameters(config: V4MtpConfig) {
  const H = config.hiddenSize;
  const p = MTP_PREFIX;
  return {
    eProj: matrixParam(`${p}.e_proj`, H, H),
    hProj: matrixParam(`${p}.h_proj`, H, H),
    enorm: f32Param(`${p}.enorm.weight`, [H], "ones"),
    hnorm: f32Param(`${p}.hnorm.weight`, [H], "ones"),
    norm: f32Param(`${p}.norm.weight`, [H], "ones"),
  };
}

/** The mHC sites and hyper head of the MTP layer. */
function mtpMhcParameters(config: V4MtpConfig): ParameterDecl[] {
  const H = config.hiddenSize;
  const { inputNorm, postNorm } = preNormParameters(MTP_PREFIX, H);
  const sites = mhcSites(MTP_PREFIX);
  return [
    ...declared(mhcHeadParameters(config.mhc, H, MTP_HC_HEAD)),
    ...declared(mhcSiteParameters(sites.mixer, inputNorm.name, config.mhc, H)),
    ...declared(mhcSiteParameters(sites.ffn, postNorm.name, config.mhc, H)),
  ];
}

/**
 * Every parameter of the MTP layer but its routed experts (`experts`, which a tiny model stores in
 * MXFP4 as the checkpoint ships them).
 */
export function v4MtpParameters(
  config: V4MtpConfig,
  vocab: number,
): { readonly layer: ParameterDecl[]; readonly experts: ParameterDecl[] } {
  const H = config.hiddenSize;
  const { gateUp, down, ...moe } = v4MoeParameters(
    v4MoeNames(MTP_PREFIX),
    { ...config.mtp.moe, vocabSize: vocab },
    H,
  );
  return {
    layer: [
      ...declared(mtpHeadParameters(config)),
      ...mtpMhcParameters(config),
      ...v4AttentionParameters(v4AttentionNames(MTP_PREFIX), config.mtp.attention, H),
      ...declared(moe),
    ],
    experts: [gateUp, down],
  };
}

/** What the MTP layer keeps per sequence: its attention's state. */
export function v4MtpStates(spec: V4MtpConfig["mtp"], switches: ReadonlyMap<string, string>): LayerStates {
  return v4AttentionStates(spec.attention, switches);
}

/** DeepSeek-V4's MTP layer, drafting with the main model's embedding and LM head. */
export class V4Mtp implements DraftModel {
  private constructor(
    private readonly config: V4MtpConfig,
    private readonly head: ReturnType<typeof bindParameters<ReturnType<typeof mtpHeadParameters>>>,
    readonly residual: MhcResidual,
    readonly attention: V4Attention,
    readonly attentionConnection: MhcConnection,
    readonly moe: V4Moe,
    readonly moeConnection: MhcConnection,
    private readonly embedding: Weight,
    private readonly lmHead: Weight,
  ) {}

  /**
   * The draft head of `main` from `w`, or why there is none: no MTP layer in the config, more
   * than one (the engine drafts with one), or none in the checkpoint (transformers' conversions
   * drop it). A checkpoint with part of the layer fails to load, naming the missing tensor.
   */
  static load(w: WeightSource, config: V4MtpConfig, main: CausalLM): V4Mtp | NoDrafter {
    const names = mtpHeadParameters(config);
    if (config.mtpLayers === 0)
      return {
        subject: "num_nextn_predict_layers",
        reason: "config.json's num_nextn_predict_layers is 0: the model has no MTP layer",
      };
    if (config.mtpLayers > 1)
      return {
        subject: "num_nextn_predict_layers",
        reason: `config.json's num_nextn_predict_layers is ${config.mtpLayers}; the engine drafts with one MTP layer`,
      };
    if (!w.has(names.eProj.name))
      return {
        subject: names.eProj.name,
        reason: `the checkpoint has no MTP layer (tensor ${names.eProj.name} is missing)`,
      };
    const H = config.hiddenSize;
    const eps = config.rmsNormEps;
    const { inputNorm, postNorm } = preNormParameters(MTP_PREFIX, H);
    const sites = mhcSites(MTP_PREFIX);
    return new V4Mtp(
      config,
      bindParameters(w, names),
      MhcResidual.load(w, config.mhc, H, MTP_HC_HEAD),
      V4Attention.load(w, v4AttentionNames(MTP_PREFIX), config.mtp.attention, H),
      MhcConnection.load(w, sites.mixer, inputNorm.name, config.mhc, H, eps),
      V4Moe.load(w, v4MoeNames(MTP_PREFIX), config.mtp.moe, H),
      MhcConnection.load(w, sites.ffn, postNorm.name, config.mhc, H, eps),
      main.embedding,
      main.lmHead,
    );
  }

  states(switches: ReadonlyMap<string, string>): LayerStates {
    return v4MtpStates(this.config.mtp, switches);
  }

  forward(ctx: ForwardContext, storage: LayerStorage, previous: Float32Array): StepResult {
    const { batch, pool } = ctx;
    const T = batch.tokens.length;
    const H = this.config.hiddenSize;
    const n = this.config.mhc.streams;
    const eps = this.config.rmsNormEps;
    const e = new Float32Array(T * H);
    embed(this.embedding, batch.tokens, e);
    for (let t = 0; t < T; t++) if (batch.positions[t] === 0) e.fill(0, t * H, (t + 1) * H);
    rmsNorm(e, T, H, this.head.enorm, eps);
    const h = previous.slice(0, T * n * H);
    rmsNorm(h, T * n, H, this.head.hnorm, eps);
    const X = new Float32Array(T * n * H);
    pool.matmul(h, T * n, this.head.hProj, X);
    const ep = new Float32Array(T * H);
    pool.matmul(e, T, this.head.eProj, ep);
    for (let t = 0; t < T; t++)
      for (let i = 0; i < n; i++)
        for (let d = 0; d < H; d++)
          X[(t * n + i) * H + d] = (X[(t * n + i) * H + d] as number) + (ep[t * H + d] as number);
    this.attentionConnection.apply(X, T, (x) => this.attention.forward(x, ctx, storage), ctx);
    this.moeConnection.apply(X, T, (x) => this.moe.forward(x, ctx), ctx);
    const logits = headLogits(X, batch.logitRows, this.residual, this.head.norm, eps, this.lmHead, pool);
    return { logits, streams: X };
  }
}
