import type { WeightSource } from "../../loader/weight-source.js";
import type { FeedForward, ForwardContext } from "../../model/model.js";
import type { Weight } from "../../tensor/weight.js";
import { mixExperts } from "./expert-dispatch.js";
import { checkMoeSpec, type MoeSpec, type Routing, route } from "./routing.js";
import { type MlpNames, SwigluMlp } from "./swiglu-mlp.js";

/** Checkpoint names of a MoE layer: its router `<base>.gate` and experts `<base>.experts.N.*`. */
export interface MoeNames {
  readonly base: string;
  readonly expert: MlpNames;
}

/**
 * A mixture of SwiGLU experts: a router picks each token's top-k experts (routing.ts), each expert
 * runs once over the tokens routed to it, and the outputs mix in rank order, plus a shared expert
 * where there is one.
 */
export class RoutedMoe implements FeedForward {
  readonly outputTensors: readonly string[];

  constructor(
    readonly spec: MoeSpec,
    readonly router: Weight,
    readonly experts: readonly SwigluMlp[],
    /** Added to the router scores for choosing experts only (a score-correction bias). */
    readonly routerBias?: Float32Array,
    readonly shared?: SwigluMlp,
  ) {
    checkMoeSpec(spec);
    this.outputTensors = [...experts, ...(shared ? [shared] : [])].flatMap((e) => e.outputTensors);
  }

  /**
   * Reads the router `<base>.gate.weight`, its optional `e_score_correction_bias`, and the experts
   * `<base>.experts.N.<names>`.
   */
  static load(w: WeightSource, names: MoeNames, spec: MoeSpec, hidden: number): RoutedMoe {
    const { base } = names;
    const bias = w.optionalVector(`${base}.gate.e_score_correction_bias`, spec.numExperts);
    return new RoutedMoe(
      spec,
      w.matrix(`${base}.gate`, spec.numExperts, hidden),
      Array.from({ length: spec.numExperts }, (_, e) =>
        SwigluMlp.load(w, `${base}.experts.${e}`, hidden, spec.intermediateSize, names.expert),
      ),
      bias,
    );
  }

  forward(h: Float32Array, ctx: ForwardContext): Float32Array {
    const { pool } = ctx;
    const spec = this.spec;
    const H = this.router.cols;
    const T = h.length / H;
    const logits = new Float32Array(T * spec.numExperts);
    pool.matmul(h, T, this.router, logits);
    const routes: Routing[] = Array.from({ length: T }, (_, t) =>
      route(logits, t * spec.numExperts, spec, this.routerBias),
    );
    const out = this.shared ? this.shared.run(h, T, pool) : new Float32Array(T * H);
    const run = (e: number, x: Float32Array, n: number) => (this.experts[e] as SwigluMlp).run(x, n, pool);
    mixExperts(h, T, H, spec.numExperts, routes, run, out);
    return out;
  }
}
