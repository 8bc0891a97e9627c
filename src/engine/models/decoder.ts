import type { ModelConfig } from "../architecture.js";
import { type AttentionSpec, gqaStates } from "../blocks/attention/gqa-attention.js";
import type { MoeSpec } from "../blocks/mlp/routing.js";
import type { MhcConfig } from "../blocks/residual/mhc.js";
import { MhcConnection, MhcResidual } from "../blocks/residual/mhc-connection.js";
import { PLAIN_RESIDUAL, PreNormConnection } from "../blocks/residual/pre-norm.js";
import type { LayerStates } from "../cache/state-spec.js";
import type { YarnScaling } from "../kernels/rope.js";
import type { WeightSource } from "../loader/weight-source.js";
import { CausalLM } from "../model/causal-lm.js";
import type { FeedForward, ModelSwitch, TokenMixer } from "../model/model.js";
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

/** `model.embed_tokens`, `model.norm` and `lm_head` (the embedding itself when tied and absent). */
export function embeddingAndHead(
  w: WeightSource,
  shape: DecoderShape,
): { embedding: Weight; finalNorm: Float32Array; lmHead: Weight } {
  const { vocabSize: V, hiddenSize: H } = shape;
  const embedding = w.matrix("model.embed_tokens", V, H);
  const finalNorm = w.vector("model.norm.weight", H);
  const lmHead = shape.tieWordEmbeddings && !w.has("lm_head.weight") ? embedding : w.matrix("lm_head", V, H);
  return { embedding, finalNorm, lmHead };
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
    const p = `model.layers.${i}`;
    const inputNorm = `${p}.input_layernorm.weight`;
    const postNorm = `${p}.post_attention_layernorm.weight`;
    const { mixer, ffn } = layer(i, p);
    return {
      mixer,
      mixerConnection: new PreNormConnection(w.vector(inputNorm, H), eps, inputNorm),
      ffn,
      ffnConnection: new PreNormConnection(w.vector(postNorm, H), eps, postNorm),
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
 * transformers' names: `model.layers.N.attn_hc` with `input_layernorm`, `ffn_hc` with
 * `post_attention_layernorm`, and the hyper head `model.hc_head`), each layer's mixer and
 * feed-forward built by `layer` from its prefix.
 */
export function mhcDecoder(
  w: WeightSource,
  shape: DecoderShape & { readonly numLayers: number; readonly mhc: MhcConfig },
  layer: (index: number, prefix: string) => { mixer: TokenMixer; ffn: FeedForward },
  switches: readonly ModelSwitch[],
): CausalLM {
  const { hiddenSize: H, rmsNormEps: eps, mhc } = shape;
  const layers = Array.from({ length: shape.numLayers }, (_, i) => {
    const p = `model.layers.${i}`;
    const { mixer, ffn } = layer(i, p);
    return {
      mixer,
      mixerConnection: MhcConnection.load(w, `${p}.attn_hc`, `${p}.input_layernorm.weight`, mhc, H, eps),
      ffn,
      ffnConnection: MhcConnection.load(
        w,
        `${p}.ffn_hc`,
        `${p}.post_attention_layernorm.weight`,
        mhc,
        H,
        eps,
      ),
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
