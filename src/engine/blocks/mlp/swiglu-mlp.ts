import type { MatmulPool } from "../../kernels/pool.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { FeedForward, ForwardContext } from "../../model/model.js";
import { type ScratchHolder, stepArrayToFill } from "../../model/step-scratch.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, matrixBase, matrixParam } from "../parameters.js";

/** Checkpoint names of one gated MLP: HF's gate/up/down_proj, or Mixtral's w1/w3/w2. */
export type MlpNames = readonly [gate: string, up: string, down: string];

export const HF_MLP_NAMES: MlpNames = ["gate_proj", "up_proj", "down_proj"];
export const MIXTRAL_MLP_NAMES: MlpNames = ["w1", "w3", "w2"];

/** The parameters of a gated MLP of `intermediate` features over `hidden` under `prefix`. */
export function swigluParameters(
  prefix: string,
  hidden: number,
  intermediate: number,
  names: MlpNames = HF_MLP_NAMES,
) {
  return {
    gate: matrixParam(`${prefix}.${names[0]}`, intermediate, hidden),
    up: matrixParam(`${prefix}.${names[1]}`, intermediate, hidden),
    down: matrixParam(`${prefix}.${names[2]}`, hidden, intermediate),
  };
}

export type SwigluParameters = ReturnType<typeof swigluParameters>;

/** The gated MLP of llama: down(silu(gate(h)) * up(h)). */
export class SwigluMlp implements FeedForward {
  readonly outputTensors: readonly string[];

  constructor(
    readonly gate: Weight,
    readonly up: Weight,
    readonly down: Weight,
    downName: string,
  ) {
    this.outputTensors = [`${downName}.weight`];
  }

  /** Reads `<prefix>.<gate|up|down>` (swigluParameters) for an MLP of `intermediate` features over `hidden`. */
  static load(
    w: WeightSource,
    prefix: string,
    hidden: number,
    intermediate: number,
    names: MlpNames = HF_MLP_NAMES,
  ): SwigluMlp {
    return SwigluMlp.bind(w, swigluParameters(prefix, hidden, intermediate, names));
  }

  /** The MLP of `parameters` (swigluParameters) read from `w`. */
  static bind(w: WeightSource, parameters: SwigluParameters): SwigluMlp {
    const { gate, up, down } = bindParameters(w, parameters);
    return new SwigluMlp(gate, up, down, matrixBase(parameters.down.name));
  }

  forward(h: Float32Array, ctx: ForwardContext): Float32Array {
    return this.run(h, h.length / this.gate.cols, ctx.pool, ctx);
  }

  /** The MLP over `T` rows of h (its temporaries and output from `ctx`'s scratch when it has one). */
  run(h: Float32Array, T: number, pool: MatmulPool, ctx: ScratchHolder = {}): Float32Array {
    const I = this.gate.rows;
    // The matmuls write every value of these: a replayed buffer needs no zeroing first.
    const gate = stepArrayToFill(ctx, Float32Array, T * I);
    const up = stepArrayToFill(ctx, Float32Array, T * I);
    pool.matmulSwiglu(h, T, this.gate, this.up, gate, up);
    const out = stepArrayToFill(ctx, Float32Array, T * this.down.rows);
    pool.matmul(gate, T, this.down, out);
    return out;
  }
}
