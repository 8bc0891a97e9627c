import { rmsNorm } from "../../kernels/rmsnorm.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { Connection, ResidualStream } from "../../model/model.js";
import {
  collapseStreams,
  expandStreams,
  type HyperConnectionWeights,
  type HyperHeadWeights,
  hyperConnectionWeights,
  hyperHead,
  type MhcConfig,
  replicateToStreams,
} from "./mhc.js";

/**
 * The residual as mHC keeps it (DeepSeek-V4): `streams` copies of the hidden state, started as
 * copies of the embedding and collapsed by the hyper head (`model.hc_head.hc_{fn,base,scale}` in
 * transformers' names) before the final norm.
 */
export class MhcResidual implements ResidualStream {
  readonly streams: number;
  readonly plainResidualTensors: ReadonlyMap<string, Float32Array>;

  constructor(
    private readonly config: MhcConfig,
    private readonly hidden: number,
    private readonly head: HyperHeadWeights,
    prefix = "model.hc_head.hc_",
  ) {
    this.streams = config.streams;
    // Zero mixing logits weigh every stream alike.
    this.plainResidualTensors = plainSite(prefix, head);
  }

  static load(w: WeightSource, config: MhcConfig, hidden: number): MhcResidual {
    const n = config.streams;
    const p = "model.hc_head";
    return new MhcResidual(
      config,
      hidden,
      {
        fn: w.tensor(`${p}.hc_fn`, [n, n * hidden]),
        base: w.tensor(`${p}.hc_base`, [n]),
        scale: w.tensor(`${p}.hc_scale`, [1]),
      },
      `${p}.hc_`,
    );
  }

  expand(x: Float32Array, T: number): Float32Array {
    const X = new Float32Array(T * this.streams * this.hidden);
    replicateToStreams(x, T, this.streams, this.hidden, X);
    return X;
  }

  collapse(X: Float32Array, R: number): Float32Array {
    const out = new Float32Array(R * this.hidden);
    hyperHead(X, this.head, this.config, R, this.hidden, out);
    return out;
  }
}

/**
 * One sub-layer's hyper-connection: from the streams it computes pre, post and the Sinkhorn-
 * normalized comb (mhc.ts), feeds the block RMSNorm(Σ pre_i X_i), and writes back
 * X_k = post_k · block output + Σ_j comb[j, k] X_j. Its tensors are `<site>.{fn,base,scale}`
 * (transformers' `model.layers.N.attn_hc` / `ffn_hc`).
 */
export class MhcConnection implements Connection {
  readonly plainResidualTensors: ReadonlyMap<string, Float32Array>;

  constructor(
    private readonly config: MhcConfig,
    private readonly weights: HyperConnectionWeights,
    private readonly norm: Float32Array,
    private readonly normEps: number,
    readonly normTensor: string,
    site: string,
  ) {
    // Zero mixing logits give pre = sigmoid(0) + eps for every stream, post = 2 sigmoid(0) = 1 and a
    // uniform comb, so streams that start equal stay equal: X += block(norm(X)).
    this.plainResidualTensors = plainSite(`${site}.`, weights);
  }

  static load(
    w: WeightSource,
    site: string,
    normTensor: string,
    config: MhcConfig,
    hidden: number,
    normEps: number,
  ): MhcConnection {
    const n = config.streams;
    const mixes = (2 + n) * n;
    return new MhcConnection(
      config,
      {
        fn: w.tensor(`${site}.fn`, [mixes, n * hidden]),
        base: w.tensor(`${site}.base`, [mixes]),
        scale: w.tensor(`${site}.scale`, [3]),
      },
      w.vector(normTensor, hidden),
      normEps,
      normTensor,
      site,
    );
  }

  apply(X: Float32Array, T: number, block: (h: Float32Array) => Float32Array): void {
    const n = this.config.streams;
    const H = this.norm.length;
    const pre = new Float32Array(T * n);
    const post = new Float32Array(T * n);
    const comb = new Float32Array(T * n * n);
    hyperConnectionWeights(X, this.weights, this.config, T, H, pre, post, comb);
    const h = new Float32Array(T * H);
    collapseStreams(X, pre, T, n, H, h);
    rmsNorm(h, T, H, this.norm, this.normEps);
    const y = block(h);
    const next = new Float32Array(X.length);
    expandStreams(y, X, post, comb, T, n, H, next);
    X.set(next);
  }
}

/** A site's tensors with zero mixing weights and biases and unit scales, by name. */
function plainSite(
  prefix: string,
  site: { fn: Float32Array; base: Float32Array; scale: Float32Array },
): ReadonlyMap<string, Float32Array> {
  return new Map([
    [`${prefix}fn`, new Float32Array(site.fn.length)],
    [`${prefix}base`, new Float32Array(site.base.length)],
    [`${prefix}scale`, new Float32Array(site.scale.length).fill(1)],
  ]);
}

/** How a tiny model writes seeded tensors (tiny/port-kit.ts's kit): normal draws of `std`, or given values. */
export interface TinyWriter {
  random(name: string, shape: number[], std: number): void;
  put(name: string, shape: number[], data: Float32Array): void;
}

/**
 * A tiny model's mHC tensors under transformers' names, for `layers` layers of `hidden` with
 * `streams` streams: each layer's two sites (`attn_hc`, `ffn_hc`: small mixing weights, biases
 * of 0.5, unit scales) and the hyper head (`model.hc_head.hc_*`).
 */
export function putTinyMhc(kit: TinyWriter, layers: number, streams: number, hidden: number): void {
  const n = streams;
  for (let i = 0; i < layers; i++) {
    for (const site of [`model.layers.${i}.attn_hc`, `model.layers.${i}.ffn_hc`]) {
      kit.random(`${site}.fn`, [(2 + n) * n, n * hidden], 0.02);
      kit.random(`${site}.base`, [(2 + n) * n], 0.5);
      kit.put(`${site}.scale`, [3], new Float32Array(3).fill(1));
    }
  }
  kit.random("model.hc_head.hc_fn", [n, n * hidden], 0.02);
  kit.random("model.hc_head.hc_base", [n], 0.5);
  kit.put("model.hc_head.hc_scale", [1], new Float32Array(1).fill(1));
}
