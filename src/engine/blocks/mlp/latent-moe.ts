import { BringupError } from "../../../common/errors.js";
import type { MatmulPool } from "../../kernels/pool.js";
import { rmsNorm } from "../../kernels/rmsnorm.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { FeedForward, ForwardContext } from "../../model/model.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, f32Param, matrixParam } from "../parameters.js";
import { mixExperts } from "./expert-dispatch.js";
import { checkMoeSpec, type MoeSpec, type Routing, route } from "./routing.js";

/** The sizes of a latent mixture of experts (LatentMoE, arXiv 2601.18089). */
export interface LatentMoeSpec {
  /** Routing of the experts; `intermediateSize` is each routed expert's hidden layer. */
  readonly routing: MoeSpec;
  /** Nemotron-H's moe_latent_size: the width routed experts read and write. */
  readonly latentSize: number;
  /** Nemotron-H's moe_shared_expert_intermediate_size: the full-width shared expert's hidden layer. */
  readonly sharedIntermediateSize: number;
  /** Epsilon of the RMSNorm on each routed expert's output. */
  readonly expertNormEps: number;
}

/**
 * Checkpoint names of one latent MoE under `prefix` (Nemotron-H's `mixer` names, here under a
 * decoder layer's `mlp`): the router `gate.weight` and `gate.e_score_correction_bias`,
 * `fc1_latent_proj` and `fc2_latent_proj`, the experts `experts.N.{up,down}_proj` and the shared
 * expert `shared_experts.{up,down}_proj`; and the port's own `experts.N.output_norm.weight`, the
 * norm no public model has.
 */
export function latentMoeNames(prefix: string) {
  return {
    gate: `${prefix}.gate`,
    bias: `${prefix}.gate.e_score_correction_bias`,
    down: `${prefix}.fc1_latent_proj`,
    up: `${prefix}.fc2_latent_proj`,
    expertUp: (e: number) => `${prefix}.experts.${e}.up_proj`,
    expertDown: (e: number) => `${prefix}.experts.${e}.down_proj`,
    expertNorm: (e: number) => `${prefix}.experts.${e}.output_norm.weight`,
    sharedUp: `${prefix}.shared_experts.up_proj`,
    sharedDown: `${prefix}.shared_experts.down_proj`,
  };
}

/**
 * Every parameter of a latent MoE under `prefix` over `hidden` features: the block's own (router,
 * score-correction bias, latent projections, shared expert where there is one) and each routed
 * expert's (its two matrices, which a checkpoint may store in MXFP4, and the port's output norm).
 */
export function latentMoeParameters(prefix: string, spec: LatentMoeSpec, hidden: number) {
  const n = latentMoeNames(prefix);
  const { numExperts: E, intermediateSize: I } = spec.routing;
  const L = spec.latentSize;
  const S = spec.sharedIntermediateSize;
  return {
    block: {
      gate: matrixParam(n.gate, E, hidden),
      // Small draws, so the correction takes part in the choice without deciding it.
      bias: f32Param(n.bias, [E], { std: 0.05 }),
      fc1: matrixParam(n.down, L, hidden),
      fc2: matrixParam(n.up, hidden, L),
      sharedUp: S > 0 ? matrixParam(n.sharedUp, S, hidden) : undefined,
      sharedDown: S > 0 ? matrixParam(n.sharedDown, hidden, S) : undefined,
    },
    experts: Array.from({ length: E }, (_, e) => ({
      up: matrixParam(n.expertUp(e), I, L),
      down: matrixParam(n.expertDown(e), L, I),
      norm: f32Param(n.expertNorm(e), [L], "ones"),
    })),
  };
}

/** Nemotron-H's expert activation, relu²: max(x, 0)² in place. */
function relu2(x: Float32Array): void {
  for (let i = 0; i < x.length; i++) {
    const v = Math.max(x[i] as number, 0);
    x[i] = v * v;
  }
}

/** A non-gated relu² MLP (Nemotron-H's expert): down(relu²(up(x))) over n rows. */
function relu2Mlp(x: Float32Array, n: number, up: Weight, down: Weight, pool: MatmulPool): Float32Array {
  const act = new Float32Array(n * up.rows);
  pool.matmul(x, n, up, act);
  relu2(act);
  const out = new Float32Array(n * down.rows);
  pool.matmul(act, n, down, out);
  return out;
}

interface RoutedExpert {
  readonly up: Weight;
  readonly down: Weight;
  readonly norm: Float32Array;
}

/**
 * LatentMoE with a norm on every expert's output. The router scores each token on its full hidden
 * state; `fc1_latent_proj` projects the token to the latent width, where each chosen expert runs
 * (relu² MLP) and its output passes through the expert's own RMSNorm (weight `output_norm`, at the
 * latent width); the router weights combine the normalized outputs in rank order, and
 * `fc2_latent_proj` projects the sum back to the hidden width. A shared relu² expert runs on the
 * full hidden state beside them and is added. Because the norm sits between each expert and the
 * combine, scaling an expert's down projection changes nothing (the test pins this).
 */
export class LatentMoe implements FeedForward {
  readonly outputTensors: readonly string[];

  constructor(
    readonly spec: LatentMoeSpec,
    private readonly gate: Weight,
    private readonly down: Weight,
    private readonly up: Weight,
    private readonly experts: readonly RoutedExpert[],
    private readonly routerBias: Float32Array,
    private readonly shared: { readonly up: Weight; readonly down: Weight } | undefined,
    /** fc2_latent_proj and the shared expert's down projection: zeroed, they silence the block. */
    outputTensors: readonly string[],
  ) {
    checkMoeSpec(spec.routing);
    this.outputTensors = outputTensors;
  }

  /**
   * Reads the block's tensors under `prefix` (latentMoeNames). First every tensor the latent width
   * shapes is held to moe_latent_size: one that disagrees is refused in one line naming the field,
   * the tensor and the width it has.
   */
  static load(w: WeightSource, prefix: string, spec: LatentMoeSpec, hidden: number): LatentMoe {
    const n = latentMoeNames(prefix);
    const L = spec.latentSize;
    checkLatentWidth(w, L, [
      [n.down, "rows"],
      [n.up, "cols"],
      ...Array.from({ length: spec.routing.numExperts }, (_, e): [string, "rows" | "cols"][] => [
        [n.expertUp(e), "cols"],
        [n.expertDown(e), "rows"],
      ]).flat(),
    ]);
    const parameters = latentMoeParameters(prefix, spec, hidden);
    const b = bindParameters(w, parameters.block);
    const experts = parameters.experts.map((e) => bindParameters(w, e));
    const shared = b.sharedUp && b.sharedDown ? { up: b.sharedUp, down: b.sharedDown } : undefined;
    return new LatentMoe(spec, b.gate, b.fc1, b.fc2, experts, b.bias, shared, [
      parameters.block.fc2.name,
      ...(parameters.block.sharedDown ? [parameters.block.sharedDown.name] : []),
    ]);
  }

  forward(h: Float32Array, ctx: ForwardContext): Float32Array {
    const { pool } = ctx;
    const { routing } = this.spec;
    const E = routing.numExperts;
    const H = this.gate.cols;
    const L = this.spec.latentSize;
    const T = h.length / H;
    const logits = new Float32Array(T * E);
    pool.matmul(h, T, this.gate, logits);
    const routes: Routing[] = Array.from({ length: T }, (_, t) =>
      route(logits, t * E, routing, this.routerBias),
    );
    const latent = new Float32Array(T * L);
    pool.matmul(h, T, this.down, latent);
    const run = (e: number, x: Float32Array, rows: number) => {
      const expert = this.experts[e] as RoutedExpert;
      const y = relu2Mlp(x, rows, expert.up, expert.down, pool);
      rmsNorm(y, rows, L, expert.norm, this.spec.expertNormEps);
      return y;
    };
    const mixed = new Float32Array(T * L);
    mixExperts(latent, T, L, E, routes, run, mixed);
    const out = new Float32Array(T * H);
    pool.matmul(mixed, T, this.up, out);
    if (this.shared) {
      const s = relu2Mlp(h, T, this.shared.up, this.shared.down, pool);
      for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) + (s[i] as number);
    }
    return out;
  }
}

/**
 * Holds each matrix `<base>.weight` (or its MXFP4 `weight_blocks`, 32 values a block) to a latent
 * width of `L` on its rows or columns; a missing tensor is left to the load to name.
 */
function checkLatentWidth(w: WeightSource, L: number, matrices: readonly [string, "rows" | "cols"][]): void {
  for (const [base, side] of matrices) {
    const plain = w.shape(`${base}.weight`);
    const blocks = plain === undefined ? w.shape(`${base}.weight_blocks`) : undefined;
    const shape = plain ?? blocks;
    if (shape === undefined || shape.length < 2) continue;
    const width =
      side === "rows" ? (shape[0] as number) : blocks ? 32 * (shape[1] as number) : (shape[1] as number);
    if (width !== L) {
      const tensor = `${base}.${plain ? "weight" : "weight_blocks"}`;
      throw new BringupError(
        "MODEL_WEIGHTS_MISMATCH",
        `${w.source}: moe_latent_size ${L} does not match ${tensor}, whose latent width (its ${side}) is ${width}; set moe_latent_size to the width the latent projections and experts share.`,
        { subject: "moe_latent_size" },
      );
    }
  }
}
