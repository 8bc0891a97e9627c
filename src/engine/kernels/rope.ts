/** YaRN context extension parameters, as HF `rope_scaling` with rope_type "yarn" gives them. */
export interface YarnScaling {
  readonly factor: number;
  readonly originalMaxPositionEmbeddings: number;
  readonly betaFast: number;
  readonly betaSlow: number;
  readonly mscale?: number;
  readonly mscaleAllDim?: number;
  /**
   * Whether the correction range is rounded outwards to whole dimensions (HF's default, true);
   * gpt-oss's config sets false (HF `_compute_yarn_parameters`' `truncate`).
   */
  readonly truncate?: boolean;
  /** HF's `attention_factor`: the cos/sin factor itself, in place of the mscale-derived one. */
  readonly attentionFactor?: number;
}

/**
 * The extra softmax scale YaRN gives DeepSeek-V3's latent attention: mscale(factor,
 * mscale_all_dim)^2 when the config has a nonzero `mscale_all_dim`, else 1 (HF
 * `models/deepseek_v3/modeling_deepseek_v3.py` DeepseekV3Attention.__init__; vLLM
 * `model_executor/models/deepseek_v2.py` DeepseekV2MLAAttention does the same). DeepSeek's own
 * `inference/model.py` scales by the same square, computed from `mscale` (1.0 in its configs,
 * equal to mscale_all_dim in every public one).
 */
export function yarnSoftmaxScale(y: YarnScaling): number {
  if (!y.mscaleAllDim) return 1;
  const m = yarnMscale(y.factor, y.mscaleAllDim);
  return m * m;
}

/**
 * Rotary position embedding tables for one head layout, in the HF "rotate half" convention:
 * within the first `rotaryDim` features of a head, feature i pairs with i + rotaryDim/2.
 * With `partialRotaryFactor` < 1 the remaining features pass through unrotated.
 */
export class Rope {
  readonly rotaryDim: number;
  private readonly invFreq: Float64Array;
  private readonly attentionFactor: number;
  private cos = new Float32Array(0);
  private sin = new Float32Array(0);
  private cached = 0;

  constructor(headDim: number, partialRotaryFactor: number, theta: number, yarn?: YarnScaling) {
    this.rotaryDim = Math.round(headDim * partialRotaryFactor);
    const half = this.rotaryDim / 2;
    this.invFreq = new Float64Array(half);
    for (let i = 0; i < half; i++) this.invFreq[i] = 1 / theta ** ((2 * i) / this.rotaryDim);
    this.attentionFactor = 1;
    if (yarn !== undefined) {
      this.attentionFactor = yarnInvFreq(this.invFreq, this.rotaryDim, theta, yarn);
    }
  }

  /**
   * Rotates `numHeads` heads of size `headDim` at x[offset...] for a token at `pos`; `inverse`
   * rotates back (by -pos, sin negated), as DeepSeek-V4 does to its attention output.
   */
  apply(
    x: Float32Array,
    offset: number,
    numHeads: number,
    headDim: number,
    pos: number,
    inverse = false,
  ): void {
    this.ensure(pos + 1);
    const half = this.rotaryDim / 2;
    const t = pos * half;
    for (let h = 0; h < numHeads; h++) {
      const o = offset + h * headDim;
      for (let i = 0; i < half; i++) {
        const c = this.cos[t + i] as number;
        const s = inverse ? -(this.sin[t + i] as number) : (this.sin[t + i] as number);
        const a = x[o + i] as number;
        const b = x[o + i + half] as number;
        x[o + i] = a * c - b * s;
        x[o + i + half] = b * c + a * s;
      }
    }
  }

  /**
   * DeepSeek's RoPE on x[offset .. offset + dim): features 2i and 2i+1 rotate together at frequency
   * i. The engine's Rope rotates i with i + dim/2 at frequency i, so the pairs are gathered into that
   * order, rotated and put back (as HF's DeepSeek-V3 code does to load the same checkpoint);
   * `inverse` rotates back by -pos.
   */
  rotateAdjacentPairs(x: Float32Array, offset: number, dim: number, pos: number, inverse = false): void {
    const half = dim / 2;
    const tmp = new Float32Array(dim);
    for (let i = 0; i < half; i++) {
      tmp[i] = x[offset + 2 * i] as number;
      tmp[i + half] = x[offset + 2 * i + 1] as number;
    }
    this.apply(tmp, 0, 1, dim, pos, inverse);
    for (let i = 0; i < half; i++) {
      x[offset + 2 * i] = tmp[i] as number;
      x[offset + 2 * i + 1] = tmp[i + half] as number;
    }
  }

  private ensure(positions: number): void {
    if (positions <= this.cached) return;
    const n = Math.max(positions, this.cached * 2, 256);
    const half = this.rotaryDim / 2;
    const cos = new Float32Array(n * half);
    const sin = new Float32Array(n * half);
    cos.set(this.cos);
    sin.set(this.sin);
    for (let p = this.cached; p < n; p++) {
      for (let i = 0; i < half; i++) {
        const angle = p * (this.invFreq[i] as number);
        cos[p * half + i] = Math.cos(angle) * this.attentionFactor;
        sin[p * half + i] = Math.sin(angle) * this.attentionFactor;
      }
    }
    this.cos = cos;
    this.sin = sin;
    this.cached = n;
  }
}

function yarnMscale(scale: number, mscale = 1): number {
  return scale <= 1 ? 1 : 0.1 * mscale * Math.log(scale) + 1;
}

/**
 * Rewrites `invFreq` in place with YaRN's blend of interpolated and extrapolated frequencies and
 * returns the attention factor that scales cos and sin (the YaRN paper's formulas, as HF applies them).
 */
function yarnInvFreq(invFreq: Float64Array, dim: number, base: number, y: YarnScaling): number {
  const correctionDim = (rotations: number) =>
    (dim * Math.log(y.originalMaxPositionEmbeddings / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
  const keep = (v: number) => v;
  const [down, up] = y.truncate === false ? [keep, keep] : [Math.floor, Math.ceil];
  const low = Math.max(down(correctionDim(y.betaFast)), 0);
  let high = Math.min(up(correctionDim(y.betaSlow)), dim - 1);
  if (high === low) high += 0.001;
  for (let i = 0; i < invFreq.length; i++) {
    const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
    const extrapolationWeight = 1 - ramp;
    const extrapolated = invFreq[i] as number;
    const interpolated = extrapolated / y.factor;
    invFreq[i] = interpolated * (1 - extrapolationWeight) + extrapolated * extrapolationWeight;
  }
  if (y.attentionFactor !== undefined) return y.attentionFactor;
  // HF tests them for truthiness: a zero mscale or mscale_all_dim falls back to the plain factor.
  if (y.mscale && y.mscaleAllDim) {
    return yarnMscale(y.factor, y.mscale) / yarnMscale(y.factor, y.mscaleAllDim);
  }
  return yarnMscale(y.factor);
}
