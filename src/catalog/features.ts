/**
 * The one registry of architecture features that make a port hard. A manifest names features by
 * these ids only; the linter rejects any other id.
 */
export const FEATURES = {
  "attention.sliding-window": "Some layers attend only to a fixed window of recent tokens.",
  "attention.interleaved-global":
    "Sliding-window layers are interleaved with full (global) attention layers.",
  "attention.sinks": "A learned per-head sink logit joins the softmax denominator without being attended.",
  "attention.asymmetric-heads": "Query/key heads and value heads have different head sizes.",
  "attention.kda": "Kimi Delta Attention: a linear-attention mixer with a gated delta-rule recurrent state.",
  "attention.dsa": "DeepSeek Sparse Attention: an indexer picks the top-k past tokens each query attends to.",
  "attention.mla": "Multi-head latent attention: keys and values are compressed into a shared latent.",
  "moe.latent": "Experts run in a down-projected latent space rather than the model's hidden size.",
  "moe.expert-output-norm": "Each expert's output passes through its own normalization before mixing.",
  "moe.grouped-topk": "Experts are chosen by grouped top-k over sigmoid scores with a correction bias.",
  "mlp.clamped-swiglu": "SwiGLU with clamped gate and linear inputs and a scaled sigmoid, as in gpt-oss.",
  "position.none": "No rotary or absolute position embedding in the attention.",
  "position.relative-logits": "A learned relative-position logit per head is added to the attention scores.",
  "mixer.short-conv": "Short causal convolutions that carry a small recurrent state across decode steps.",
  "residual.mhc":
    "Manifold-constrained hyper-connections: several residual streams mixed by learned matrices.",
  "kv.window-sized": "The KV cache of sliding-window layers holds only the window, not the whole context.",
  "kv.long-context": "Context lengths of 256K tokens and more, beyond the stock serving configuration.",
  "decode.drafting": "Speculative decoding with a draft model or draft head verified by the target.",
  "decode.step-replay": "A whole decode step is captured once and replayed as a graph.",
  "load.custom-format": "Weights ship in a format the stock loader cannot read.",
  "weights.mxfp4": "Weights stored as OCP MXFP4: E2M1 elements with one E8M0 scale per 32.",
  "weights.mxfp4-to-fp8": "MXFP4 weights re-encoded as FP8 E4M3 exactly, for kernels that take FP8.",
  "kernels.custom": "Custom device kernels that the stock image does not have.",
} as const satisfies Record<string, string>;

export type FeatureId = keyof typeof FEATURES;

export const FEATURE_IDS = Object.keys(FEATURES) as [FeatureId, ...FeatureId[]];

export function isFeatureId(value: string): value is FeatureId {
  return Object.hasOwn(FEATURES, value);
}
