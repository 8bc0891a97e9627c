import type { WeightSource } from "../../loader/weight-source.js";
import type { FeedForward, ForwardContext } from "../../model/model.js";
import { stepArray } from "../../model/step-scratch.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, declared, f32Param, matrixParam, type ParameterDecl } from "../parameters.js";
import { mixExperts } from "./expert-dispatch.js";
import { checkMoeSpec, type MoeSpec, type Routing, route } from "./routing.js";
import { type MlpNames, SwigluMlp, swigluParameters } from "./swiglu-mlp.js";

/** Checkpoint names of a MoE layer: its router `<base>.gate` and experts `<base>.experts.N.*`. */
export interface MoeNames {
  readonly base: string;
  readonly expert: MlpNames;
}

/** How a MoE layer's router is declared. */
export interface RouterOptions {
  /** Whether the router has a score-correction bias `<base>.gate.e_score_correction_bias`. */
  readonly correctionBias: boolean;
  /** The bias's tiny values come from the seed of `<base>.gate.bias` (DeepSeek-V3's tiny model, as first drawn). */
  readonly biasSeedOfGate?: boolean;
}

/** The router matrix's base (its weight `<base>.weight`) of the MoE layer under `base`. */
function routerBase(base: string): string {
  return `${base}.gate`;
}

/** The router of the MoE layer under `base` (and its score-correction bias, drawn at std 0.1). */
function routerParameters(base: string, spec: MoeSpec, hidden: number, options: RouterOptions) {
  const gate = routerBase(base);
  const name = `${gate}.e_score_correction_bias`;
  return {
    router: matrixParam(gate, spec.numExperts, hidden),
    bias: options.correctionBias
      ? {
          ...f32Param(name, [spec.numExperts], { std: 0.1 }),
          ...(options.biasSeedOfGate ? { seedName: `${gate}.bias` } : {}),
        }
      : undefined,
  };
}

/** Whether `w` holds a MoE layer's router under `names` (how a checkpoint shows which names it uses). */
export function hasRouter(w: WeightSource, names: MoeNames): boolean {
  return w.has(`${routerBase(names.base)}.weight`);
}

function expertPrefix(names: MoeNames, e: number): string {
  return `${names.base}.experts.${e}`;
}

/** The parameters of a MoE layer: its router, and its experts apart (which a tiny model may quantize). */
export function routedMoeParameters(
  names: MoeNames,
  spec: MoeSpec,
  hidden: number,
  options: RouterOptions = { correctionBias: false },
): { readonly router: ParameterDecl[]; readonly experts: ParameterDecl[] } {
  return {
    router: declared(routerParameters(names.base, spec, hidden, options)),
    experts: Array.from({ length: spec.numExperts }, (_, e) =>
      declared(swigluParameters(expertPrefix(names, e), hidden, spec.intermediateSize, names.expert)),
    ).flat(),
  };
}

/**
 * The shared experts' one MLP beside the routed ones, `<base>.shared_experts.{gate,up,down}_proj`
 * of width `intermediate` (n_shared_experts x moe_intermediate_size: DeepSeek-V3's layout, Kimi
 * Linear's KimiMoE), added to the routed experts' scaled mix.
 */
export function sharedExpertParameters(names: MoeNames, hidden: number, intermediate: number) {
  return swigluParameters(`${names.base}.shared_experts`, hidden, intermediate);
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
   * Reads the router `<base>.gate.weight`, its score-correction bias where the checkpoint has one,
   * and the experts `<base>.experts.N.<names>` (routedMoeParameters).
   */
  static load(w: WeightSource, names: MoeNames, spec: MoeSpec, hidden: number): RoutedMoe {
    const withBias = routerParameters(names.base, spec, hidden, { correctionBias: true });
    const hasBias = w.has((withBias.bias as ParameterDecl).name);
    const { router, bias } = bindParameters(w, {
      router: withBias.router,
      bias: hasBias ? withBias.bias : undefined,
    });
    return new RoutedMoe(
      spec,
      router,
      Array.from({ length: spec.numExperts }, (_, e) =>
        SwigluMlp.load(w, expertPrefix(names, e), hidden, spec.intermediateSize, names.expert),
      ),
      bias,
    );
  }

  /** RoutedMoe.load with the shared experts' MLP of width `sharedIntermediate` (none at 0). */
  static loadWithShared(
    w: WeightSource,
    names: MoeNames,
    spec: MoeSpec,
    hidden: number,
    sharedIntermediate: number,
  ): RoutedMoe {
    const routed = RoutedMoe.load(w, names, spec, hidden);
    if (sharedIntermediate === 0) return routed;
    const shared = SwigluMlp.bind(w, sharedExpertParameters(names, hidden, sharedIntermediate));
    return new RoutedMoe(spec, routed.router, routed.experts, routed.routerBias, shared);
  }

  forward(h: Float32Array, ctx: ForwardContext): Float32Array {
    const { pool } = ctx;
    const spec = this.spec;
    const H = this.router.cols;
    const T = h.length / H;
    const logits = stepArray(ctx, Float32Array, T * spec.numExperts);
    pool.matmul(h, T, this.router, logits);
    const routes: Routing[] = Array.from({ length: T }, (_, t) =>
      route(logits, t * spec.numExperts, spec, this.routerBias),
    );
    const out = this.shared ? this.shared.run(h, T, pool, ctx) : stepArray(ctx, Float32Array, T * H);
    const run = (e: number, x: Float32Array, n: number) => (this.experts[e] as SwigluMlp).run(x, n, pool);
    mixExperts(h, T, H, spec.numExperts, routes, run, out, ctx);
    return out;
  }
}
