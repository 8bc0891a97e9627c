import { rmsNorm } from "../../kernels/rmsnorm.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { Connection, ResidualStream } from "../../model/model.js";
import { type ScratchHolder, stepArray } from "../../model/step-scratch.js";
import { bindParameters, f32Param, type ParameterDecl } from "../parameters.js";
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
 * The hyper head's parameters (`model.hc_head.hc_{fn,base,scale}` in transformers' names): mixing
 * weights drawn at std 0.02, biases at 0.5, the scale one.
 */
export function mhcHeadParameters(config: MhcConfig, hidden: number, p = "model.hc_head.hc_") {
  const n = config.streams;
  return {
    fn: f32Param(`${p}fn`, [n, n * hidden], { std: 0.02 }),
    base: f32Param(`${p}base`, [n], { std: 0.5 }),
    scale: f32Param(`${p}scale`, [1], "ones"),
  };
}

/**
 * One sub-layer's hyper-connection parameters `<site>.{fn,base,scale}` (drawn as the head's; three
 * scales: pre, post, comb) and the norm `normTensor` before its block.
 */
export function mhcSiteParameters(site: string, normTensor: string, config: MhcConfig, hidden: number) {
  const n = config.streams;
  const mixes = (2 + n) * n;
  return {
    fn: f32Param(`${site}.fn`, [mixes, n * hidden], { std: 0.02 }),
    base: f32Param(`${site}.base`, [mixes], { std: 0.5 }),
    scale: f32Param(`${site}.scale`, [3], "ones"),
    norm: f32Param(normTensor, [hidden], "ones"),
  };
}

/**
 * The residual as mHC keeps it (DeepSeek-V4): `streams` copies of the hidden state, started as
 * copies of the embedding and collapsed by the hyper head (mhcHeadParameters) before the final norm.
 */
export class MhcResidual implements ResidualStream {
  readonly streams: number;
  readonly plainResidualTensors: ReadonlyMap<string, Float32Array>;

  constructor(
    private readonly config: MhcConfig,
    private readonly hidden: number,
    private readonly head: HyperHeadWeights,
    names: SiteNames,
  ) {
    this.streams = config.streams;
    // Zero mixing logits weigh every stream alike.
    this.plainResidualTensors = plainSite(names, head);
  }

  /** The residual whose head's tensors are `<prefix>{fn,base,scale}` (default the main model's). */
  static load(w: WeightSource, config: MhcConfig, hidden: number, prefix?: string): MhcResidual {
    const head = mhcHeadParameters(config, hidden, prefix);
    return new MhcResidual(config, hidden, bindParameters(w, head), siteNames(head));
  }

  expand(x: Float32Array, T: number, ctx: ScratchHolder): Float32Array {
    const X = stepArray(ctx, Float32Array, T * this.streams * this.hidden);
    replicateToStreams(x, T, this.streams, this.hidden, X);
    return X;
  }

  collapse(X: Float32Array, R: number, ctx: ScratchHolder): Float32Array {
    const out = stepArray(ctx, Float32Array, R * this.hidden);
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
    names: SiteNames,
  ) {
    // Zero mixing logits give pre = sigmoid(0) + eps for every stream, post = 2 sigmoid(0) = 1 and a
    // uniform comb, so streams that start equal stay equal: X += block(norm(X)).
    this.plainResidualTensors = plainSite(names, weights);
  }

  /** Reads the site's declared parameters (mhcSiteParameters) and the norm `normTensor` before its block. */
  static load(
    w: WeightSource,
    site: string,
    normTensor: string,
    config: MhcConfig,
    hidden: number,
    normEps: number,
  ): MhcConnection {
    const parameters = mhcSiteParameters(site, normTensor, config, hidden);
    const { norm, ...weights } = bindParameters(w, parameters);
    return new MhcConnection(config, weights, norm, normEps, normTensor, siteNames(parameters));
  }

  apply(X: Float32Array, T: number, block: (h: Float32Array) => Float32Array, ctx: ScratchHolder): void {
    const n = this.config.streams;
    const H = this.norm.length;
    const pre = stepArray(ctx, Float32Array, T * n);
    const post = stepArray(ctx, Float32Array, T * n);
    const comb = stepArray(ctx, Float32Array, T * n * n);
    hyperConnectionWeights(X, this.weights, this.config, T, H, pre, post, comb);
    const h = stepArray(ctx, Float32Array, T * H);
    collapseStreams(X, pre, T, n, H, h);
    rmsNorm(h, T, H, this.norm, this.normEps);
    const y = block(h);
    const next = stepArray(ctx, Float32Array, X.length);
    expandStreams(y, X, post, comb, T, n, H, next);
    X.set(next);
  }
}

/** The checkpoint names of one mHC site's mixing weights, biases and scales. */
interface SiteNames {
  readonly fn: string;
  readonly base: string;
  readonly scale: string;
}

function siteNames(p: Record<keyof SiteNames, ParameterDecl>): SiteNames {
  return { fn: p.fn.name, base: p.base.name, scale: p.scale.name };
}

/** A site's tensors with zero mixing weights and biases and unit scales, by name. */
function plainSite(
  names: SiteNames,
  site: { fn: Float32Array; base: Float32Array; scale: Float32Array },
): ReadonlyMap<string, Float32Array> {
  return new Map([
    [names.fn, new Float32Array(site.fn.length)],
    [names.base, new Float32Array(site.base.length)],
    [names.scale, new Float32Array(site.scale.length).fill(1)],
  ]);
}
