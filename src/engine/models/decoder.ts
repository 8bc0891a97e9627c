import type { ModelConfig } from "../architecture.js";
import {
  type AttentionNames,
  type AttentionSpec,
  GqaAttention,
  gqaParameters,
  gqaStates,
} from "../blocks/attention/gqa-attention.js";
import { type MoeNames, RoutedMoe, routedMoeParameters } from "../blocks/mlp/routed-moe.js";
import type { MoeSpec } from "../blocks/mlp/routing.js";
import { SwigluMlp, swigluParameters } from "../blocks/mlp/swiglu-mlp.js";
import { bindParameters, declared, f32Param, matrixParam, type ParameterDecl } from "../blocks/parameters.js";
import type { MhcConfig } from "../blocks/residual/mhc.js";
import {
  MhcConnection,
  MhcResidual,
  mhcHeadParameters,
  mhcSiteParameters,
} from "../blocks/residual/mhc-connection.js";
import { PLAIN_RESIDUAL, PreNormConnection } from "../blocks/residual/pre-norm.js";
import type { LayerStates } from "../cache/state-spec.js";
import type { YarnScaling } from "../kernels/rope.js";
import type { WeightSource } from "../loader/weight-source.js";
import { CausalLM } from "../model/causal-lm.js";
import type { FeedForward, TokenMixer } from "../model/model.js";
import type { ModelSwitch } from "../model/model-switch.js";
import type { Weight } from "../tensor/weight.js";

/** One layer of an attention + MLP decoder. */
export interface LayerSpec {
  readonly attention: AttentionSpec;
  readonly mlp: "dense" | "moe";
}

/** The parsed config of a GQA decoder with dense or MoE MLPs (the llama family, MiMo). */
export interface DecoderConfig extends ModelConfig {
  readonly intermediateSize: number;
  readonly rmsNormEps: number;
  readonly tieWordEmbeddings: boolean;
  readonly ropeScaling?: YarnScaling;
  readonly moe?: MoeSpec;
  readonly layers: readonly LayerSpec[];
}

/** What each layer of a GQA decoder keeps: its attention's keys and values. */
export function decoderStates(config: { readonly layers: readonly LayerSpec[] }): LayerStates[] {
  return config.layers.map((l) => gqaStates(l.attention));
}

/** What the embedding, final norm and head of every HF decoder need from its config. */
export interface DecoderShape {
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly rmsNormEps: number;
  readonly tieWordEmbeddings: boolean;
}

/**
 * The parameters of `model.embed_tokens`, `model.norm` and `lm_head` (absent when `withHead` is
 * false: tied embeddings without a head of their own).
 */
export function embeddingParameters(
  shape: Pick<DecoderShape, "vocabSize" | "hiddenSize" | "tieWordEmbeddings">,
  withHead = !shape.tieWordEmbeddings,
) {
  const { vocabSize: V, hiddenSize: H } = shape;
  return {
    embedding: matrixParam("model.embed_tokens", V, H, "embedding"),
    finalNorm: f32Param("model.norm.weight", [H], "ones"),
    lmHead: withHead ? matrixParam("lm_head", V, H) : undefined,
  };
}

/** `model.embed_tokens`, `model.norm` and `lm_head` (the embedding itself when tied and absent). */
export function embeddingAndHead(
  w: WeightSource,
  shape: DecoderShape,
): { embedding: Weight; finalNorm: Float32Array; lmHead: Weight } {
  const withHead = !shape.tieWordEmbeddings || w.has("lm_head.weight");
  const { embedding, finalNorm, lmHead } = bindParameters(w, embeddingParameters(shape, withHead));
  return { embedding, finalNorm, lmHead: lmHead ?? embedding };
}

/** The norms before the mixer and before the feed-forward of the pre-norm layer at `prefix`. */
export function preNormParameters(prefix: string, hidden: number) {
  return {
    inputNorm: f32Param(`${prefix}.input_layernorm.weight`, [hidden], "ones"),
    postNorm: f32Param(`${prefix}.post_attention_layernorm.weight`, [hidden], "ones"),
  };
}

/** Where an mHC layer at `prefix` keeps its two hyper-connection sites: before the mixer, before the feed-forward. */
export function mhcSites(prefix: string): { readonly mixer: string; readonly ffn: string } {
  return { mixer: `${prefix}.attn_hc`, ffn: `${prefix}.ffn_hc` };
}

/** The prefix of decoder layer `index` in HF's layout. */
export function layerPrefix(index: number): string {
  return `model.layers.${index}`;
}

/**
 * A pre-norm decoder of `numLayers` layers in HF's layout (`model.layers.N.input_layernorm`,
 * `post_attention_layernorm`), each layer's mixer and feed-forward built by `layer` from its prefix.
 */
export function preNormDecoder(
  w: WeightSource,
  shape: DecoderShape & { readonly numLayers: number },
  layer: (index: number, prefix: string) => { mixer: TokenMixer; ffn: FeedForward },
  switches?: readonly ModelSwitch[],
): CausalLM {
  const { hiddenSize: H, rmsNormEps: eps } = shape;
  const layers = Array.from({ length: shape.numLayers }, (_, i) => {
    const p = layerPrefix(i);
    const norms = preNormParameters(p, H);
    const { inputNorm, postNorm } = bindParameters(w, norms);
    const { mixer, ffn } = layer(i, p);
    return {
      mixer,
      mixerConnection: new PreNormConnection(inputNorm, eps, norms.inputNorm.name),
      ffn,
      ffnConnection: new PreNormConnection(postNorm, eps, norms.postNorm.name),
    };
  });
  return new CausalLM({
    hiddenSize: H,
    vocabSize: shape.vocabSize,
    rmsNormEps: eps,
    residual: PLAIN_RESIDUAL,
    layers,
    ...embeddingAndHead(w, shape),
    ...(switches ? { switches } : {}),
  });
}

/**
 * A decoder of `numLayers` layers whose sub-layers join an mHC residual of `mhc` (DeepSeek-V4's, in
 * transformers' names: `<layer>.attn_hc` with `input_layernorm` before the mixer, `<layer>.ffn_hc`
 * with `post_attention_layernorm` before the feed-forward, the hyper head `model.hc_head`), each
 * layer's mixer and feed-forward built by `layer` from its prefix.
 */
export function mhcDecoder(
  w: WeightSource,
  shape: DecoderShape & { readonly numLayers: number; readonly mhc: MhcConfig },
  layer: (index: number, prefix: string) => { mixer: TokenMixer; ffn: FeedForward },
  switches: readonly ModelSwitch[],
): CausalLM {
  const { hiddenSize: H, rmsNormEps: eps, mhc } = shape;
  const layers = Array.from({ length: shape.numLayers }, (_, i) => {
    const p = layerPrefix(i);
    const { inputNorm, postNorm } = preNormParameters(p, H);
    const { mixer, ffn } = layer(i, p);
    const sites = mhcSites(p);
    return {
      mixer,
      mixerConnection: MhcConnection.load(w, sites.mixer, inputNorm.name, mhc, H, eps),
      ffn,
      ffnConnection: MhcConnection.load(w, sites.ffn, postNorm.name, mhc, H, eps),
    };
  });
  return new CausalLM({
    hiddenSize: H,
    vocabSize: shape.vocabSize,
    rmsNormEps: eps,
    residual: MhcResidual.load(w, mhc, H),
    layers,
    ...embeddingAndHead(w, shape),
    switches,
  });
}

/** The mHC residual's parameters in an mhcDecoder of `numLayers` layers: the hyper head, each layer's two sites. */
export function mhcDecoderParameters(mhc: MhcConfig, numLayers: number, hidden: number): ParameterDecl[] {
  return [
    ...declared(mhcHeadParameters(mhc, hidden)),
    ...Array.from({ length: numLayers }, (_, i) => {
      const p = layerPrefix(i);
      const { inputNorm, postNorm } = preNormParameters(p, hidden);
      const sites = mhcSites(p);
      return [
        ...declared(mhcSiteParameters(sites.mixer, inputNorm.name, mhc, hidden)),
        ...declared(mhcSiteParameters(sites.ffn, postNorm.name, mhc, hidden)),
      ];
    }).flat(),
  ];
}

/** Where each layer of a GQA decoder keeps its attention and mixture-of-experts tensors. */
export interface GqaDecoderNames {
  readonly attention: (prefix: string) => AttentionNames;
  readonly moe: (prefix: string) => MoeNames;
  /** Whether the routers have a score-correction bias (declared; loading reads one where present). */
  readonly correctionBias: boolean;
}

/**
 * The parameters of a GQA decoder of `config` (the llama family, MiMo): the embedding, final norm
 * and head; the decoder layers' norms, attention, dense MLPs and routers; the routed experts apart,
 * which a tiny model may store in another dtype.
 */
export function gqaDecoderParameters(
  config: DecoderConfig,
  names: GqaDecoderNames,
): { readonly outer: ParameterDecl[]; readonly layers: ParameterDecl[]; readonly experts: ParameterDecl[] } {
  const H = config.hiddenSize;
  const layers: ParameterDecl[] = [];
  const experts: ParameterDecl[] = [];
  config.layers.forEach((spec, i) => {
    const p = layerPrefix(i);
    layers.push(
      ...declared(preNormParameters(p, H)),
      ...declared(gqaParameters(names.attention(p), spec.attention, H)),
    );
    if (spec.mlp === "moe" && config.moe !== undefined) {
      const moe = routedMoeParameters(names.moe(p), config.moe, H, { correctionBias: names.correctionBias });
      layers.push(...moe.router);
      experts.push(...moe.experts);
    } else layers.push(...declared(swigluParameters(`${p}.mlp`, H, config.intermediateSize)));
  });
  return { outer: declared(embeddingParameters(config)), layers, experts };
}

/**
 * A pre-norm GQA decoder of `config` read from `w` under `names`: each layer's attention, then a
 * SwiGLU MLP or a routed mixture of experts.
 */
export function gqaDecoder(config: DecoderConfig, w: WeightSource, names: GqaDecoderNames): CausalLM {
  const H = config.hiddenSize;
  return preNormDecoder(w, { ...config, numLayers: config.layers.length }, (i, p) => {
    const spec = config.layers[i] as LayerSpec;
    const mixer = GqaAttention.load(
      w,
      names.attention(p),
      spec.attention,
      H,
      config.rmsNormEps,
      config.ropeScaling,
    );
    const ffn =
      spec.mlp === "moe" && config.moe !== undefined
        ? RoutedMoe.load(w, names.moe(p), config.moe, H)
        : SwigluMlp.load(w, `${p}.mlp`, H, config.intermediateSize);
    return { mixer, ffn };
  });
}
