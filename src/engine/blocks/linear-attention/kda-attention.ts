import { BringupError } from "../../../common/errors.js";
import type { ConvTailState, LayerStates, RecurrentState } from "../../cache/state-spec.js";
import type { LayerStorage } from "../../cache/storage.js";
import { rmsNorm } from "../../kernels/rmsnorm.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext, SequenceRun, TokenMixer } from "../../model/model.js";
import type { ModelSwitch } from "../../model/model-switch.js";
import type { Weight } from "../../tensor/weight.js";
import { sigmoid } from "../activations.js";
import { shortConv } from "../conv/short-conv.js";
import { bindParameters, f32Param, matrixParam } from "../parameters.js";
import { kdaChunked } from "./kda-chunked.js";
import { kdaGate, l2NormalizeHeads } from "./kda-gate.js";
import { kdaRecurrent, kdaRecurrentFused } from "./kda-recurrence.js";

/** One KDA layer's sizes, as Kimi Linear's `linear_attn_config` gives them. */
export interface KdaSpec {
  readonly numHeads: number;
  /** head_dim: the key and value size of each head, and the rank of the gate projections. */
  readonly headDim: number;
  /** short_conv_kernel_size: inputs each causal convolution spans. */
  readonly convKernel: number;
}

/** vLLM builds KDA's output norm without the config's rms_norm_eps, so it keeps this default. */
const O_NORM_EPS = 1e-5;
/** Tokens per chunk of the chunked prefill form (fla's chunk size). */
export const KDA_CHUNK = 64;

/** The run-time choices KDA layers read (a model that has them declares these switches). */
export const KDA_SWITCHES: readonly ModelSwitch[] = [
  {
    name: "kda_prefill",
    values: ["recurrent", "chunked"],
    default: "recurrent",
    description:
      "how a prompt's tokens update the state: one by one as decode does (bit-identical to decoding), or in chunks of 64 (the WY form: faster, equal up to rounding)",
  },
  {
    name: "kda_kernel",
    values: ["fused", "reference"],
    default: "fused",
    description:
      "the recurrence kernel: two passes over the state per token, or the plain reference (same bits)",
  },
];

/** The convolutions whose tails KDA keeps, in the order of its q, k and v inputs. */
const CONVS = ["qConv", "kConv", "vConv"] as const;

/**
 * What a KDA layer of `spec` keeps per sequence: each head's d x d recurrent `state`, and the
 * last kernel - 1 inputs of each of its three short convolutions (`qConv`, `kConv`, `vConv`).
 */
export function kdaStates(spec: KdaSpec): {
  readonly state: RecurrentState;
} & Readonly<Record<(typeof CONVS)[number], ConvTailState>> {
  const { numHeads: H, headDim: d, convKernel: kernel } = spec;
  const tail: ConvTailState = { kind: "conv-tail", channels: H * d, kernel };
  return {
    state: { kind: "recurrent-state", numHeads: H, keyDim: d, valueDim: d },
    qConv: tail,
    kConv: tail,
    vConv: tail,
  };
}

/**
 * The parameters of one KDA layer under `prefix` (Kimi Linear's names): projections, the three
 * short convolutions [P, 1, kernel], A_log drawn from log U(1, 16) and dt_bias as the inverse
 * softplus of a rate in [0.001, 0.1] log-uniformly (as fla's KDA layer initialises them), the
 * output norm.
 */
export function kdaParameters(prefix: string, spec: KdaSpec, hidden: number) {
  const { numHeads: H, headDim: d, convKernel: K } = spec;
  const P = H * d;
  const m = (name: string, rows: number, cols: number) => matrixParam(`${prefix}.${name}`, rows, cols);
  const conv = (name: string) => f32Param(`${prefix}.${name}.weight`, [P, 1, K], "fan-in");
  return {
    q: m("q_proj", P, hidden),
    k: m("k_proj", P, hidden),
    v: m("v_proj", P, hidden),
    fA: m("f_a_proj", d, hidden),
    fB: m("f_b_proj", P, d),
    b: m("b_proj", H, hidden),
    gA: m("g_a_proj", d, hidden),
    gB: m("g_b_proj", P, d),
    o: m("o_proj", hidden, P),
    qConv: conv("q_conv1d"),
    kConv: conv("k_conv1d"),
    vConv: conv("v_conv1d"),
    aLog: f32Param(`${prefix}.A_log`, [1, 1, H, 1], { uniform: (r) => Math.log(1 + 15 * r) }),
    dtBias: f32Param(`${prefix}.dt_bias`, [P], { uniform: (r) => Math.log(Math.expm1(0.001 * 100 ** r)) }),
    oNorm: f32Param(`${prefix}.o_norm.weight`, [d], "ones"),
  };
}

/**
 * Kimi Delta Attention (vLLM `layers/kda.py`, fla `layers/kda.py`): q, k, v each through a short
 * causal convolution and SiLU, q and k L2-normalized (q also scaled by 1/sqrt(d)), a per-channel
 * decay g = -exp(A_log)·softplus(f_b(f_a(x)) + dt_bias) and a write strength β = sigmoid(b(x));
 * the gated delta rule updates each head's d x d state; the output is RMSNorm(o)·sigmoid(g_b(g_a(x)))
 * per head, then o_proj. The state and the three convolution tails are kept per sequence (one
 * slot each), zeroed when a sequence starts, so decode costs the same at every context length.
 */
export class KdaAttention implements TokenMixer {
  readonly outputTensors: readonly string[];

  constructor(
    readonly spec: KdaSpec,
    private readonly w: {
      readonly q: Weight;
      readonly k: Weight;
      readonly v: Weight;
      readonly fA: Weight;
      readonly fB: Weight;
      readonly b: Weight;
      readonly gA: Weight;
      readonly gB: Weight;
      readonly o: Weight;
      readonly qConv: Float32Array;
      readonly kConv: Float32Array;
      readonly vConv: Float32Array;
      readonly aLog: Float32Array;
      readonly dtBias: Float32Array;
      readonly oNorm: Float32Array;
    },
    oName: string,
  ) {
    this.outputTensors = [`${oName}.weight`];
  }

  /** Reads one layer's tensors under `prefix` (Kimi Linear's `model.layers.N.self_attn`). */
  static load(w: WeightSource, prefix: string, spec: KdaSpec, hidden: number): KdaAttention {
    if (spec.convKernel < 1) {
      throw new BringupError(
        "MODEL_CONFIG_INVALID",
        `${w.source}: short_conv_kernel_size must be at least 1, got ${spec.convKernel}.`,
        { subject: "short_conv_kernel_size" },
      );
    }
    return new KdaAttention(spec, bindParameters(w, kdaParameters(prefix, spec, hidden)), `${prefix}.o_proj`);
  }

  states(): LayerStates {
    return kdaStates(this.spec);
  }

  forward(h: Float32Array, ctx: ForwardContext, storage: LayerStorage): Float32Array {
    const { batch, pool } = ctx;
    const { numHeads: H, headDim: d } = this.spec;
    const P = H * d;
    const T = batch.tokens.length;
    const w = this.w;
    const q = new Float32Array(T * P);
    const k = new Float32Array(T * P);
    const v = new Float32Array(T * P);
    const fA = new Float32Array(T * d);
    const b = new Float32Array(T * H);
    const gA = new Float32Array(T * d);
    pool.matmulMany(h, T, [w.q, w.k, w.v, w.fA, w.b, w.gA], [q, k, v, fA, b, gA]);
    const f = new Float32Array(T * P);
    const gate = new Float32Array(T * P);
    pool.matmul(fA, T, w.fB, f);
    pool.matmul(gA, T, w.gB, gate);
    const o = new Float32Array(T * P);
    const state = storage.slots("state");
    const tails = CONVS.map((name) => storage.slots(name));
    for (const run of batch.sequences) {
      const S = state.view(run.slot);
      const tail = tails.map((t) => t.view(run.slot));
      if ((batch.positions[run.first] as number) === 0) for (const view of [S, ...tail]) view.fill(0);
      this.sequence(run, S, tail, { q, k, v, f, b }, o, ctx.switches);
    }
    // Gated output norm per head: RMSNorm(o) * weight * sigmoid(gate).
    rmsNorm(o, T * H, d, w.oNorm, O_NORM_EPS);
    for (let i = 0; i < o.length; i++) o[i] = (o[i] as number) * sigmoid(gate[i] as number);
    const out = new Float32Array(T * w.o.rows);
    pool.matmul(o, T, w.o, out);
    return out;
  }

  /** One sequence's run of tokens through the convolutions and the recurrence: its state S, its q/k/v tails. */
  private sequence(
    run: SequenceRun,
    S: Float32Array,
    tail: readonly Float32Array[],
    x: { q: Float32Array; k: Float32Array; v: Float32Array; f: Float32Array; b: Float32Array },
    o: Float32Array,
    switches: ReadonlyMap<string, string>,
  ): void {
    const { numHeads: H, headDim: d, convKernel: K } = this.spec;
    const P = H * d;
    const n = run.count;
    const rows = (a: Float32Array, width: number) => a.subarray(run.first * width, (run.first + n) * width);
    const conv = (input: Float32Array, weight: Float32Array, which: number) => {
      const out = new Float32Array(n * P);
      shortConv(rows(input, P), weight, tail[which] as Float32Array, n, P, K, out, true);
      return out;
    };
    const q = conv(x.q, this.w.qConv, 0);
    const k = conv(x.k, this.w.kConv, 1);
    const v = conv(x.v, this.w.vConv, 2);
    l2NormalizeHeads(q, n * H, d, 1 / Math.sqrt(d));
    l2NormalizeHeads(k, n * H, d);
    const g = new Float32Array(n * P);
    const beta = new Float32Array(n * H);
    kdaGate(rows(x.f, P), rows(x.b, H), this.w.aLog, this.w.dtBias, n, H, d, g, beta);
    const out = rows(o, P);
    if (n > 1 && switches.get("kda_prefill") === "chunked") {
      kdaChunked(q, k, v, g, beta, n, H, d, d, S, out, KDA_CHUNK);
    } else if (switches.get("kda_kernel") === "reference") {
      kdaRecurrent(q, k, v, g, beta, n, H, d, d, S, out);
    } else {
      kdaRecurrentFused(q, k, v, g, beta, n, H, d, d, S, out);
    }
  }
}
