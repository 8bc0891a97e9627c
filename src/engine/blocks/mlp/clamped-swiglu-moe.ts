import { type ClampedExpert, int8Experts } from "../../kernels/matmul/int8-experts.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { FeedForward, ForwardContext } from "../../model/model.js";
import { stepArray, stepArrayToFill } from "../../model/step-scratch.js";
import type { Weight } from "../../tensor/weight.js";
import { addBias } from "../attention/gqa-attention.js";
import { bindParameters, f32Param, matrixParam, stackedParam } from "../parameters.js";
import { mixExperts, mixRows } from "./expert-dispatch.js";
import { type Routing, routeTopKThenSoftmax } from "./routing.js";

/** The sizes and activation constants of a gpt-oss-style mixture of experts. */
export interface ClampedMoeSpec {
  readonly numExperts: number;
  readonly topK: number;
  /** Features of each expert's hidden layer (its gate and linear halves each have this many). */
  readonly intermediateSize: number;
  /** swiglu_limit: the gate is clamped above, the linear half on both sides (7 in gpt-oss). */
  readonly limit: number;
  /** The sigmoid's slope (1.702 in gpt-oss). */
  readonly alpha: number;
}

/** The parameters of a gpt-oss MoE layer under `prefix`: router, stacked experts, their biases (std 0.1). */
export function clampedMoeParameters(prefix: string, spec: ClampedMoeSpec, hidden: number) {
  const { numExperts: E, intermediateSize: I } = spec;
  const experts = `${prefix}.experts`;
  return {
    router: matrixParam(`${prefix}.router`, E, hidden),
    routerBias: f32Param(`${prefix}.router.bias`, [E], { std: 0.1 }),
    gateUp: stackedParam(`${experts}.gate_up_proj`, E, 2 * I, hidden),
    gateUpBias: f32Param(`${experts}.gate_up_proj_bias`, [E, 2 * I], { std: 0.1 }),
    down: stackedParam(`${experts}.down_proj`, E, hidden, I),
    downBias: f32Param(`${experts}.down_proj_bias`, [E, hidden], { std: 0.1 }),
  };
}

/**
 * gpt-oss's mixture of experts: a router with a bias picks each token's top-k experts and weighs
 * them by a softmax over those k; each expert's gate_up projection (with bias) feeds the clamped
 * SwiGLU, its down projection (with bias) maps back. Names as gpt-oss's checkpoints give them:
 * `<prefix>.router.{weight,bias}`, `<prefix>.experts.gate_up_proj{_blocks,_scales}` [E, 2I, ...],
 * `gate_up_proj_bias` [E, 2I], `down_proj{_blocks,_scales}` [E, H, ...], `down_proj_bias` [E, H].
 */
export class ClampedSwigluMoe implements FeedForward {
  readonly outputTensors: readonly string[];
  private readonly experts: ClampedExpert[] = [];
  /** A one-token step's routing and its experts, refilled each step. */
  private readonly tokenRouting: Routing;
  private readonly chosenExperts: ClampedExpert[];

  constructor(
    readonly spec: ClampedMoeSpec,
    private readonly router: Weight,
    private readonly routerBias: Float32Array,
    private readonly gateUp: readonly Weight[],
    private readonly gateUpBias: Float32Array,
    private readonly down: readonly Weight[],
    private readonly downBias: Float32Array,
    /** The down projection's stored tensor (`_blocks` for MXFP4) and its bias. */
    outputTensors: readonly string[],
  ) {
    this.outputTensors = outputTensors;
    this.tokenRouting = { experts: new Int32Array(spec.topK), weights: new Float64Array(spec.topK) };
    this.chosenExperts = new Array(spec.topK);
  }

  /** Reads the layer's declared parameters (clampedMoeParameters) under `prefix`. */
  static load(w: WeightSource, prefix: string, spec: ClampedMoeSpec, hidden: number): ClampedSwigluMoe {
    const parameters = clampedMoeParameters(prefix, spec, hidden);
    const p = bindParameters(w, parameters);
    const down = parameters.down.name;
    return new ClampedSwigluMoe(spec, p.router, p.routerBias, p.gateUp, p.gateUpBias, p.down, p.downBias, [
      w.has(`${down}_blocks`) ? `${down}_blocks` : down,
      parameters.downBias.name,
    ]);
  }

  forward(h: Float32Array, ctx: ForwardContext): Float32Array {
    const { pool } = ctx;
    const { numExperts: E, topK, intermediateSize: I, limit, alpha } = this.spec;
    const H = this.router.cols;
    const T = h.length / H;
    const logits = stepArrayToFill(ctx, Float32Array, T * E);
    pool.matmul(h, T, this.router, logits);
    for (let t = 0; t < T; t++)
      for (let e = 0; e < E; e++)
        logits[t * E + e] = (logits[t * E + e] as number) + (this.routerBias[e] as number);
    // One token: routed into the layer's own routing (no garbage a step).
    const token = T === 1 ? routeTopKThenSoftmax(logits, 0, E, topK, this.tokenRouting) : null;
    // At one token on the integer MXFP4 path with no helper threads: every chosen expert in a few
    // WebAssembly calls (Int8Experts), the down outputs in rank order; the bits of the calls below.
    if (token !== null && pool.mxfp4 === "int8" && pool.threads === 1) {
      const chosenExperts = this.chosenExperts;
      for (let r = 0; r < topK; r++) chosenExperts[r] = this.expert(token.experts[r] as number);
      const ys = int8Experts()?.run(h, chosenExperts, limit, alpha) ?? null;
      if (ys !== null) {
        const out = stepArray(ctx, Float32Array, H);
        mixRows(token.weights, ys, H, out);
        return out;
      }
    }
    const routes: Routing[] =
      token !== null
        ? [token]
        : Array.from({ length: T }, (_, t) => routeTopKThenSoftmax(logits, t * E, E, topK));
    const chosen = token?.experts ?? null;
    // Temporaries from the step's scratch (planned buffers when the step replays). At one token
    // every chosen expert's gate_up reads the same row: one dispatch for all of them (on the
    // integer MXFP4 path the row is quantized once; the pool's threads are woken once), each
    // output the bits its own matmul gives.
    const gateUps = Array.from(chosen ?? [], () => stepArrayToFill(ctx, Float32Array, 2 * I));
    if (chosen !== null)
      pool.matmulMany(
        h,
        1,
        Array.from(chosen, (e) => this.gateUp[e] as Weight),
        gateUps,
      );
    // The integer MXFP4 path is not exact: its SwiGLU runs in f32 (Int8Experts' too).
    const arithmetic = pool.mxfp4 === "int8" && this.gateUp[0]?.dtype === "mxfp4" ? "f32" : "f64";
    const run = (e: number, x: Float32Array, n: number) => {
      const done = chosen === null ? -1 : chosen.indexOf(e);
      const gateUp = gateUps[done] ?? stepArrayToFill(ctx, Float32Array, n * 2 * I);
      if (done < 0) pool.matmul(x, n, this.gateUp[e] as Weight, gateUp);
      addBias(gateUp, this.gateUpBias.subarray(e * 2 * I, (e + 1) * 2 * I), n);
      const act = stepArrayToFill(ctx, Float32Array, n * I);
      pool.clampedSwiglu(gateUp, n, I, limit, alpha, act, arithmetic);
      const y = stepArrayToFill(ctx, Float32Array, n * H);
      pool.matmul(act, n, this.down[e] as Weight, y);
      addBias(y, this.downBias.subarray(e * H, (e + 1) * H), n);
      return y;
    };
    const out = stepArray(ctx, Float32Array, T * H);
    mixExperts(h, T, H, E, routes, run, out, ctx);
    return out;
  }

  /** Expert e's projections and biases (made once an expert: a token's step asks for them again). */
  private expert(e: number): ClampedExpert {
    const { intermediateSize: I } = this.spec;
    const H = this.router.cols;
    this.experts[e] ??= {
      gateUp: this.gateUp[e] as Weight,
      gateUpBias: this.gateUpBias.subarray(e * 2 * I, (e + 1) * 2 * I),
      down: this.down[e] as Weight,
      downBias: this.downBias.subarray(e * H, (e + 1) * H),
    };
    return this.experts[e];
  }
}
