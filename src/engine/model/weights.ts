import type { Weight } from "../tensor/weight.js";

export interface AttentionWeights {
  readonly q: Weight;
  readonly k: Weight;
  readonly v: Weight;
  readonly o: Weight;
  readonly qBias?: Float32Array;
  readonly kBias?: Float32Array;
  readonly vBias?: Float32Array;
  readonly qNorm?: Float32Array;
  readonly kNorm?: Float32Array;
  readonly sinks?: Float32Array;
}

export interface DenseMlpWeights {
  readonly gate: Weight;
  readonly up: Weight;
  readonly down: Weight;
}

export interface MoeWeights {
  readonly router: Weight;
  /** Added to the router scores for choosing experts only (a score-correction bias). */
  readonly routerBias?: Float32Array;
  readonly experts: readonly DenseMlpWeights[];
  readonly shared?: DenseMlpWeights;
}

export interface LayerWeights {
  readonly inputNorm: Float32Array;
  readonly attention: AttentionWeights;
  readonly postAttentionNorm: Float32Array;
  readonly mlp:
    | { readonly kind: "dense"; readonly weights: DenseMlpWeights }
    | { readonly kind: "moe"; readonly weights: MoeWeights };
}

/** Every tensor of a decoder-only model, in engine form. */
export interface ModelWeights {
  readonly embed: Weight;
  readonly layers: readonly LayerWeights[];
  readonly finalNorm: Float32Array;
  /** The output projection; the embedding table itself when embeddings are tied. */
  readonly lmHead: Weight;
}
