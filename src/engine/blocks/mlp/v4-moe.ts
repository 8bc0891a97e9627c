import { BringupError } from "../../../common/errors.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { FeedForward, ForwardContext } from "../../model/model.js";
import { stepArray } from "../../model/step-scratch.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, f32Param, idsParam, matrixParam, stackedParam } from "../parameters.js";
import { mixExperts } from "./expert-dispatch.js";
import { checkMoeSpec, type MoeSpec, type Routing, route, routerScores, weigh } from "./routing.js";
import { SwigluMlp, swigluParameters } from "./swiglu-mlp.js";

/**
 * DeepSeek-V4's mixture of experts (HF transformers `models/deepseek_v4`,
 * `DeepseekV4SparseMoeBlock`): router scores sqrt(softplus(logit)); "topk" layers choose the top-k
 * of score + e_score_correction_bias (the bias steers the choice only), "hash" layers (config
 * `mlp_layer_types` "hash_moe", the first few) take the k experts a fixed table `tid2eid` gives
 * the token id; either way the chosen scores are renormalized and scaled by
 * routed_scaling_factor. Each expert is a SwiGLU whose gate is clamped above and whose up half
 * is clamped both ways at `swigluLimit`; one shared expert (no clamp) is added.
 */
export interface V4MoeSpec {
  readonly routing: "topk" | "hash";
  readonly numExperts: number;
  readonly topK: number;
  readonly intermediateSize: number;
  readonly routedScalingFactor: number;
  readonly normTopKProb: boolean;
  readonly swigluLimit: number;
  /** Rows of the hash table (the vocabulary). */
  readonly vocabSize: number;
}

/** Checkpoint names under `<prefix>.mlp`, HF's. */
export interface V4MoeNames {
  readonly router: string;
  readonly bias: string;
  readonly table: string;
  readonly gateUp: string;
  readonly down: string;
  readonly shared: string;
}

export function v4MoeNames(prefix: string): V4MoeNames {
  const p = `${prefix}.mlp`;
  return {
    router: `${p}.gate`,
    bias: `${p}.gate.e_score_correction_bias`,
    table: `${p}.gate.tid2eid`,
    gateUp: `${p}.experts.gate_up_proj`,
    down: `${p}.experts.down_proj`,
    shared: `${p}.shared_experts`,
  };
}

/** The routing kept as the engine's MoeSpec: sqrt-softplus scores, no groups. */
function moeSpec(spec: V4MoeSpec): MoeSpec {
  return {
    numExperts: spec.numExperts,
    topK: spec.topK,
    intermediateSize: spec.intermediateSize,
    scoring: "sqrtsoftplus",
    normTopKProb: spec.normTopKProb,
    routedScalingFactor: spec.routedScalingFactor,
    numGroups: 1,
    topKGroups: 1,
  };
}

/**
 * The parameters of one V4 MoE layer: the router, its score-correction bias (top-k layers) or its
 * hash table (hash layers, drawn for a tiny model by v4HashTable), the experts stacked [E, 2I, H]
 * (gate rows, then up rows) and [E, H, I] (f32, or MXFP4 `_blocks`/`_scales` as checkpoints ship
 * them), and the shared expert.
 */
export function v4MoeParameters(names: V4MoeNames, spec: V4MoeSpec, hidden: number) {
  const { numExperts: E, intermediateSize: I } = spec;
  return {
    router: matrixParam(names.router, E, hidden),
    bias: spec.routing === "topk" ? f32Param(names.bias, [E], "fan-in") : undefined,
    table:
      spec.routing === "hash"
        ? idsParam(names.table, [spec.vocabSize, spec.topK], (i) => tinyHashExpert(spec, i))
        : undefined,
    gateUp: stackedParam(names.gateUp, E, 2 * I, hidden),
    down: stackedParam(names.down, E, hidden, I),
    ...sharedExpert(names, hidden, I),
  };
}

/** The shared expert's projections, as roles of the layer's parameters. */
function sharedExpert(names: V4MoeNames, hidden: number, I: number) {
  const { gate, up, down } = swigluParameters(names.shared, hidden, I);
  return { sharedGate: gate, sharedUp: up, sharedDown: down };
}

/**
 * Entry `index` of a hash layer's table for a tiny model (flat over [vocab, k]): token t takes
 * experts (t + j x stride) mod E for j < k, stride the largest step that keeps them distinct, so
 * consecutive ids spread over every expert. The real table comes with the checkpoint.
 */
export function tinyHashExpert(spec: V4MoeSpec, index: number): number {
  const { topK: k, numExperts: E } = spec;
  const stride = Math.max(1, Math.floor(E / k));
  return (Math.floor(index / k) + (index % k) * stride) % E;
}

export class V4Moe implements FeedForward {
  readonly outputTensors: readonly string[];
  private readonly routing: MoeSpec;

  constructor(
    readonly spec: V4MoeSpec,
    private readonly router: Weight,
    /** topk layers: the score-correction bias. */
    private readonly bias: Float32Array | undefined,
    /** hash layers: [vocab, topK] expert ids. */
    private readonly table: Int32Array | undefined,
    private readonly gateUp: readonly Weight[],
    private readonly down: readonly Weight[],
    private readonly shared: SwigluMlp,
    downName: string,
  ) {
    this.routing = moeSpec(spec);
    checkMoeSpec(this.routing);
    this.outputTensors = [downName, ...shared.outputTensors];
  }

  /** Reads the layer's tensors by `names`; a hash table that names a missing expert is refused by name. */
  static load(w: WeightSource, names: V4MoeNames, spec: V4MoeSpec, hidden: number): V4Moe {
    if (spec.routing === "topk" && w.has(names.table)) {
      throw new BringupError(
        "MODEL_WEIGHTS_MISMATCH",
        `${w.source}: ${names.table} is a hash-routing table, but config.json routes this layer by top-k; make mlp_layer_types (or num_hash_layers) agree with the checkpoint.`,
        { subject: names.table },
      );
    }
    const { sharedGate: gate, sharedUp: up, sharedDown: down, ...own } = v4MoeParameters(names, spec, hidden);
    const p = bindParameters(w, own);
    if (p.table) checkTable(p.table, spec, names.table);
    return new V4Moe(
      spec,
      p.router,
      p.bias,
      p.table,
      p.gateUp,
      p.down,
      SwigluMlp.bind(w, { gate, up, down }),
      w.has(`${names.down}_blocks`) ? `${names.down}_blocks` : names.down,
    );
  }

  forward(h: Float32Array, ctx: ForwardContext): Float32Array {
    const { pool, batch } = ctx;
    const { numExperts: E, topK: k, intermediateSize: I, swigluLimit: limit } = this.spec;
    const H = this.router.cols;
    const T = h.length / H;
    const logits = stepArray(ctx, Float32Array, T * E);
    pool.matmul(h, T, this.router, logits);
    const table = this.table;
    const routes: Routing[] = Array.from({ length: T }, (_, t) => {
      if (table === undefined) return route(logits, t * E, this.routing, this.bias);
      const id = batch.tokens[t] as number;
      return weigh(
        routerScores(logits, t * E, this.routing),
        table.slice(id * k, (id + 1) * k),
        this.routing,
      );
    });
    // Every expert's rows lie at its place among the T x k (token, rank) pairs of one buffer each.
    const gateUps = stepArray(ctx, Float32Array, T * k * 2 * I);
    const acts = stepArray(ctx, Float32Array, T * k * I);
    const ys = stepArray(ctx, Float32Array, T * k * H);
    const run = (e: number, x: Float32Array, n: number, first: number) => {
      const gateUp = gateUps.subarray(first * 2 * I, (first + n) * 2 * I);
      pool.matmul(x, n, this.gateUp[e] as Weight, gateUp);
      const act = limitedSwiglu(gateUp, n, I, limit, acts.subarray(first * I, (first + n) * I));
      const y = ys.subarray(first * H, (first + n) * H);
      pool.matmul(act, n, this.down[e] as Weight, y);
      return y;
    };
    const out = this.shared.run(h, T, pool, ctx);
    mixExperts(h, T, H, E, routes, run, out, ctx);
    return out;
  }
}

/**
 * DeepSeek-V4's expert activation on gate_up [n, 2I] (gate columns, then up columns):
 * silu(min(gate, limit)) x clamp(up, -limit, limit), [n, I], each value in float64 rounded once.
 */
export function limitedSwiglu(
  gateUp: Float32Array,
  n: number,
  I: number,
  limit: number,
  out = new Float32Array(n * I),
): Float32Array {
  for (let t = 0; t < n; t++) {
    for (let i = 0; i < I; i++) {
      const g = Math.min(gateUp[t * 2 * I + i] as number, limit);
      const u = Math.min(Math.max(gateUp[t * 2 * I + I + i] as number, -limit), limit);
      out[t * I + i] = (g / (1 + Math.exp(-g))) * u;
    }
  }
  return out;
}

/** Refuses a hash table whose ids fall outside the experts or repeat within a token. */
function checkTable(table: Int32Array, spec: V4MoeSpec, name: string): void {
  const k = spec.topK;
  for (let t = 0; t < table.length / k; t++) {
    const row = table.subarray(t * k, (t + 1) * k);
    const bad = row.find((e) => e < 0 || e >= spec.numExperts);
    const repeated = new Set(row).size < k;
    if (bad !== undefined || repeated) {
      throw new BringupError(
        "MODEL_WEIGHTS_INVALID",
        `${name}: token ${t} is routed to experts [${[...row].join(", ")}], ${bad !== undefined ? `but there are only ${spec.numExperts} (ids 0..${spec.numExperts - 1})` : "one of them twice"}; the hash table does not fit config.json's n_routed_experts / num_experts_per_tok.`,
        { subject: name },
      );
    }
  }
}
