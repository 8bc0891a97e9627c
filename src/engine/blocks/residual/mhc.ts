/**
 * Manifold-constrained hyper-connections (mHC): the residual is n parallel streams (n = hc_mult) and each
 * sub-layer reads a weighted sum of them and writes back a mix of them plus its output.
 *
 * Source followed: huggingface/transformers `src/transformers/models/deepseek_v4/modeling_deepseek_v4.py`
 * (`DeepseekV4HyperConnection`, `DeepseekV4HyperHead`, `DeepseekV4DecoderLayer.forward`, as stored at
 * commit 361455895daf94ca66f78cf6792b09af397b4b30); DeepSeek's own `hc_pre` / `hc_post` /
 * `hc_split_sinkhorn` compute the same. For one token with streams X [n, H]:
 *
 *   x̂      = flatten(X) · rsqrt(mean(flatten(X)²) + rms_norm_eps)         (n·H values, no weight)
 *   mix    = fn · x̂                                                      ((2+n)·n values)
 *   pre_i  = sigmoid(mix[i] · scale[0] + base[i]) + hc_eps                 i < n
 *   post_i = 2 · sigmoid(mix[n+i] · scale[1] + base[n+i])
 *   comb   = sinkhorn(mix[2n + i·n + j] · scale[2] + base[2n + i·n + j])  [n, n], row i, column j
 *   block input      = Σ_i pre_i X_i
 *   new X_k          = post_k · blockOut + Σ_j comb[j, k] X_j               (combᵀ X: sum over the FIRST index)
 *   head (final)     = Σ_i pre_i X_i with pre from the head's own fn [n, n·H], base [n], scale [1]
 *
 * Layouts, row-major over T tokens: streams [T, n, H]; pre, post [T, n]; comb [T, n, n]; block input and
 * output [T, H]. Rounding: all arithmetic is float64; pre, post, comb and every output are rounded once,
 * when stored into their float32 arrays, and the mixing steps read those stored float32 weights (the
 * source keeps them in float32 too).
 */
import { sigmoid } from "../activations.js";
import { expectDims, expectLength } from "../shapes.js";

/** The config fields mHC reads (DeepseekV4Config: hc_mult, hc_sinkhorn_iters, hc_eps, rms_norm_eps). */
export interface MhcConfig {
  /** hc_mult: the number of residual streams n (4 in DeepSeek-V4). */
  streams: number;
  /** hc_sinkhorn_iters: 20 in DeepSeek-V4; see `sinkhornProject` for what one iteration is. */
  sinkhornIters: number;
  /** hc_eps: added to pre, to the softmax and to every Sinkhorn denominator (1e-6). */
  hcEps: number;
  /** rms_norm_eps: the epsilon of the unweighted RMS norm over the flattened streams (1e-6). */
  normEps: number;
}

/**
 * One sub-layer site's parameters: checkpoint `layers.L.hc_attn_{fn,base,scale}` or
 * `layers.L.hc_ffn_{fn,base,scale}` (transformers: `attn_hc.{fn,base,scale}`, `ffn_hc.*`), float32.
 */
export interface HyperConnectionWeights {
  /** [(2+n)·n, n·H] */
  fn: Float32Array;
  /** [(2+n)·n] */
  base: Float32Array;
  /** [3]: pre, post, comb */
  scale: Float32Array;
}

/** The final collapse's parameters: checkpoint `hc_head_{fn,base,scale}` (transformers `hc_head.hc_*`). */
export interface HyperHeadWeights {
  /** [n, n·H] */
  fn: Float32Array;
  /** [n] */
  base: Float32Array;
  /** [1] */
  scale: Float32Array;
}

/**
 * Projects an n×n logit matrix (row-major, in place) onto the doubly stochastic matrices the way the
 * source does: softmax over each row, + eps; divide each column by (its sum + eps); then iters − 1 more
 * rounds of (rows by their sum + eps, then columns by their sum + eps). So `iters` = 20 means 20 column
 * normalizations and 19 row normalizations after the softmax.
 */
export function sinkhornProject(m: Float64Array, n: number, iters: number, eps: number): void {
  for (let i = 0; i < n; i++) {
    let max = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < n; j++) max = Math.max(max, m[i * n + j] as number);
    let sum = 0;
    for (let j = 0; j < n; j++) {
      const e = Math.exp((m[i * n + j] as number) - max);
      m[i * n + j] = e;
      sum += e;
    }
    for (let j = 0; j < n; j++) m[i * n + j] = (m[i * n + j] as number) / sum + eps;
  }
  normalizeColumns(m, n, eps);
  for (let round = 1; round < iters; round++) {
    normalizeRows(m, n, eps);
    normalizeColumns(m, n, eps);
  }
}

function normalizeRows(m: Float64Array, n: number, eps: number): void {
  for (let i = 0; i < n; i++) {
    let sum = 0;
    for (let j = 0; j < n; j++) sum += m[i * n + j] as number;
    for (let j = 0; j < n; j++) m[i * n + j] = (m[i * n + j] as number) / (sum + eps);
  }
}

function normalizeColumns(m: Float64Array, n: number, eps: number): void {
  for (let j = 0; j < n; j++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += m[i * n + j] as number;
    for (let i = 0; i < n; i++) m[i * n + j] = (m[i * n + j] as number) / (sum + eps);
  }
}

/** flatten(X_t) · rsqrt(mean(flatten(X_t)²) + eps) for token t of streams [T, n, H], into `normed`. */
function normalizedStreams(
  streams: Float32Array,
  t: number,
  width: number,
  eps: number,
  normed: Float64Array,
) {
  let sumSquares = 0;
  for (let e = 0; e < width; e++) sumSquares += (streams[t * width + e] as number) ** 2;
  const inverseRms = 1 / Math.sqrt(sumSquares / width + eps);
  for (let e = 0; e < width; e++) normed[e] = (streams[t * width + e] as number) * inverseRms;
}

/** fn [rows, width] · normed, row r. */
function mixRow(fn: Float32Array, r: number, normed: Float64Array, width: number): number {
  let acc = 0;
  for (let e = 0; e < width; e++) acc += (fn[r * width + e] as number) * (normed[e] as number);
  return acc;
}

/** pre [T, n], post [T, n] and comb [T, n, n] of one sub-layer site, from streams [T, n, H]. */
export function hyperConnectionWeights(
  streams: Float32Array,
  weights: HyperConnectionWeights,
  config: MhcConfig,
  T: number,
  H: number,
  pre: Float32Array,
  post: Float32Array,
  comb: Float32Array,
): void {
  const n = config.streams;
  const mixes = (2 + n) * n;
  const width = n * H;
  expectDims("hyperConnectionWeights", { T, H, n, sinkhornIters: config.sinkhornIters });
  expectLength("hyperConnectionWeights", "streams", streams, T * width, "[T, n, H]");
  expectLength("hyperConnectionWeights", "fn", weights.fn, mixes * width, "[(2+n)·n, n·H]");
  expectLength("hyperConnectionWeights", "base", weights.base, mixes, "[(2+n)·n]");
  expectLength("hyperConnectionWeights", "scale", weights.scale, 3, "[3]");
  expectLength("hyperConnectionWeights", "pre", pre, T * n, "[T, n]");
  expectLength("hyperConnectionWeights", "post", post, T * n, "[T, n]");
  expectLength("hyperConnectionWeights", "comb", comb, T * n * n, "[T, n, n]");
  const { fn, base, scale } = weights;
  const [preScale, postScale, combScale] = [scale[0] as number, scale[1] as number, scale[2] as number];
  const normed = new Float64Array(width);
  const logits = new Float64Array(n * n);
  for (let t = 0; t < T; t++) {
    normalizedStreams(streams, t, width, config.normEps, normed);
    for (let i = 0; i < n; i++) {
      pre[t * n + i] = sigmoid(mixRow(fn, i, normed, width) * preScale + (base[i] as number)) + config.hcEps;
      post[t * n + i] = 2 * sigmoid(mixRow(fn, n + i, normed, width) * postScale + (base[n + i] as number));
    }
    for (let e = 0; e < n * n; e++) {
      logits[e] = mixRow(fn, 2 * n + e, normed, width) * combScale + (base[2 * n + e] as number);
    }
    sinkhornProject(logits, n, config.sinkhornIters, config.hcEps);
    comb.set(logits, t * n * n);
  }
}

/** Σ_i weight_i X_i per token: streams [T, n, H], weight [T, n], out [T, H]. */
export function collapseStreams(
  streams: Float32Array,
  weight: Float32Array,
  T: number,
  n: number,
  H: number,
  out: Float32Array,
): void {
  expectDims("collapseStreams", { T, n, H });
  expectLength("collapseStreams", "streams", streams, T * n * H, "[T, n, H]");
  expectLength("collapseStreams", "weight", weight, T * n, "[T, n]");
  expectLength("collapseStreams", "out", out, T * H, "[T, H]");
  for (let t = 0; t < T; t++) {
    for (let d = 0; d < H; d++) {
      let acc = 0;
      for (let i = 0; i < n; i++)
        acc += (weight[t * n + i] as number) * (streams[(t * n + i) * H + d] as number);
      out[t * H + d] = acc;
    }
  }
}

/**
 * new X_k = post_k · blockOut + Σ_j comb[j, k] X_j per token, into `next` [T, n, H] (which must not share
 * memory with `streams`): blockOut [T, H], streams [T, n, H], post [T, n], comb [T, n, n].
 */
export function expandStreams(
  blockOut: Float32Array,
  streams: Float32Array,
  post: Float32Array,
  comb: Float32Array,
  T: number,
  n: number,
  H: number,
  next: Float32Array,
): void {
  expectDims("expandStreams", { T, n, H });
  expectLength("expandStreams", "blockOut", blockOut, T * H, "[T, H]");
  expectLength("expandStreams", "streams", streams, T * n * H, "[T, n, H]");
  expectLength("expandStreams", "post", post, T * n, "[T, n]");
  expectLength("expandStreams", "comb", comb, T * n * n, "[T, n, n]");
  expectLength("expandStreams", "next", next, T * n * H, "[T, n, H]");
  for (let t = 0; t < T; t++) {
    for (let k = 0; k < n; k++) {
      const p = post[t * n + k] as number;
      for (let d = 0; d < H; d++) {
        let mixed = 0;
        for (let j = 0; j < n; j++) {
          mixed += (comb[(t * n + j) * n + k] as number) * (streams[(t * n + j) * H + d] as number);
        }
        next[(t * n + k) * H + d] = p * (blockOut[t * H + d] as number) + mixed;
      }
    }
  }
}

/** The start of the residual: every stream a copy of the embedding. x [T, H] → streams [T, n, H]. */
export function replicateToStreams(
  x: Float32Array,
  T: number,
  n: number,
  H: number,
  streams: Float32Array,
): void {
  expectDims("replicateToStreams", { T, n, H });
  expectLength("replicateToStreams", "x", x, T * H, "[T, H]");
  expectLength("replicateToStreams", "streams", streams, T * n * H, "[T, n, H]");
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < n; i++) streams.set(x.subarray(t * H, (t + 1) * H), (t * n + i) * H);
  }
}

/**
 * The head before the final norm: pre = sigmoid(fn · x̂ · scale + base) + hc_eps, then Σ_i pre_i X_i.
 * streams [T, n, H] → out [T, H].
 */
export function hyperHead(
  streams: Float32Array,
  weights: HyperHeadWeights,
  config: MhcConfig,
  T: number,
  H: number,
  out: Float32Array,
): void {
  const n = config.streams;
  const width = n * H;
  expectDims("hyperHead", { T, H, n });
  expectLength("hyperHead", "streams", streams, T * width, "[T, n, H]");
  expectLength("hyperHead", "fn", weights.fn, n * width, "[n, n·H]");
  expectLength("hyperHead", "base", weights.base, n, "[n]");
  expectLength("hyperHead", "scale", weights.scale, 1, "[1]");
  const pre = new Float32Array(T * n);
  const normed = new Float64Array(width);
  for (let t = 0; t < T; t++) {
    normalizedStreams(streams, t, width, config.normEps, normed);
    for (let i = 0; i < n; i++) {
      const mix = mixRow(weights.fn, i, normed, width);
      pre[t * n + i] =
        sigmoid(mix * (weights.scale[0] as number) + (weights.base[i] as number)) + config.hcEps;
    }
  }
  collapseStreams(streams, pre, T, n, H, out);
}
