import type { AttentionState, LayerStates } from "../../cache/state-spec.js";
import type { LayerStorage } from "../../cache/storage.js";
import { rmsNorm } from "../../kernels/rmsnorm.js";
import { Rope, type YarnScaling } from "../../kernels/rope.js";
import { addInto } from "../../kernels/vector/vector-ops.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext, TokenMixer } from "../../model/model.js";
import { stepArray, stepArrayToFill } from "../../model/step-scratch.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, f32Param, matrixParam } from "../parameters.js";
import { pagedTables } from "./paged-tables.js";

/**
 * Grouped-query attention of one layer. "full": a query attends to every earlier position.
 * "sliding": only to the last `window` positions, itself included (pos - window + 1 .. pos).
 */
export interface AttentionSpec {
  readonly kind: "full" | "sliding";
  /** Sliding layers: positions a query sees, itself included; 0 for full layers. */
  readonly window: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  /** Query/key head size. */
  readonly headDim: number;
  /** Value head size (equal to headDim in llama-style models). */
  readonly vHeadDim: number;
  readonly ropeTheta: number;
  /** Fraction of each query/key head that is rotated (1 = all). */
  readonly partialRotaryFactor: number;
  readonly bias: boolean;
  /** An o_proj bias too (gpt-oss's `attention_bias` covers all four projections; Qwen2's only q/k/v). */
  readonly outputBias?: boolean;
  /** Per-head RMSNorm of queries and keys before RoPE (Qwen3). */
  readonly qkNorm: boolean;
  /** A learned per-head logit added to the softmax denominator (attention sinks). */
  readonly sinks: boolean;
  /** Values are multiplied by this after their projection (MiMo's attention_value_scale); default 1. */
  readonly valueScale?: number;
}

export interface AttentionWeights {
  readonly q: Weight;
  readonly k: Weight;
  readonly v: Weight;
  readonly o: Weight;
  readonly qBias?: Float32Array;
  readonly kBias?: Float32Array;
  readonly vBias?: Float32Array;
  readonly oBias?: Float32Array;
  readonly qNorm?: Float32Array;
  readonly kNorm?: Float32Array;
  readonly sinks?: Float32Array;
}

/** Checkpoint names of one attention layer's tensors (HF's `self_attn.*` by default). */
export interface AttentionNames {
  readonly q: string;
  readonly k: string;
  readonly v: string;
  readonly o: string;
  readonly qNorm: string;
  readonly kNorm: string;
  readonly sinks: string;
}

/** HF's names under `<prefix>.self_attn`, with the sink logits as `sinksName` (gpt-oss: "sinks"). */
export function attentionNames(prefix: string, sinksName = "sinks"): AttentionNames {
  const p = `${prefix}.self_attn`;
  return {
    q: `${p}.q_proj`,
    k: `${p}.k_proj`,
    v: `${p}.v_proj`,
    o: `${p}.o_proj`,
    qNorm: `${p}.q_norm.weight`,
    kNorm: `${p}.k_norm.weight`,
    sinks: `${p}.${sinksName}`,
  };
}

/**
 * The parameters of one attention layer of `spec` under `names`: q/k/v/o projections, with q/k/v
 * (and o) biases, per-head q/k norms and sink logits where the spec has them.
 */
export function gqaParameters(names: AttentionNames, spec: AttentionSpec, hidden: number) {
  const qOut = spec.numHeads * spec.headDim;
  const kOut = spec.numKvHeads * spec.headDim;
  const vOut = spec.numKvHeads * spec.vHeadDim;
  // Biases of about a tenth of a feature; sinks of about the size of a score, so each head gives
  // a visible share to nothing.
  const bias = (base: string, n: number) =>
    spec.bias ? f32Param(`${base}.bias`, [n], { std: 0.1 }) : undefined;
  return {
    q: matrixParam(names.q, qOut, hidden),
    k: matrixParam(names.k, kOut, hidden),
    v: matrixParam(names.v, vOut, hidden),
    o: matrixParam(names.o, hidden, spec.numHeads * spec.vHeadDim),
    qBias: bias(names.q, qOut),
    kBias: bias(names.k, kOut),
    vBias: bias(names.v, vOut),
    oBias: spec.outputBias ? bias(names.o, hidden) : undefined,
    qNorm: spec.qkNorm ? f32Param(names.qNorm, [spec.headDim], "ones") : undefined,
    kNorm: spec.qkNorm ? f32Param(names.kNorm, [spec.headDim], "ones") : undefined,
    sinks: spec.sinks ? f32Param(names.sinks, [spec.numHeads], { std: 1 }) : undefined,
  };
}

/**
 * Attention over the paged KV cache: q/k/v projections (with biases, q/k norms, value scale as the
 * spec says), RoPE on the rotated part of each head, the step's keys and values written to the
 * cache, then each query attends to its visible positions (kernels equal to
 * kernels/paged-attention/paged-attention.ts bit for bit) and o_proj maps the heads back.
 */
export class GqaAttention implements TokenMixer {
  readonly outputTensors: readonly string[];
  private readonly rope: Rope;

  constructor(
    readonly spec: AttentionSpec,
    readonly weights: AttentionWeights,
    readonly names: AttentionNames,
    private readonly hiddenSize: number,
    private readonly normEps: number,
    ropeScaling?: YarnScaling,
  ) {
    this.outputTensors = [`${names.o}.weight`];
    this.rope = new Rope(spec.headDim, spec.partialRotaryFactor, spec.ropeTheta, ropeScaling);
  }

  /** Reads the layer's declared parameters (gqaParameters) by `names`, shapes from `spec` and `hiddenSize`. */
  static load(
    w: WeightSource,
    names: AttentionNames,
    spec: AttentionSpec,
    hiddenSize: number,
    normEps: number,
    ropeScaling?: YarnScaling,
  ): GqaAttention {
    const weights: AttentionWeights = bindParameters(w, gqaParameters(names, spec, hiddenSize));
    return new GqaAttention(spec, weights, names, hiddenSize, normEps, ropeScaling);
  }

  /** The parameters this layer was read from (gqaParameters), by role. */
  parameters(): ReturnType<typeof gqaParameters> {
    return gqaParameters(this.names, this.spec, this.hiddenSize);
  }

  states(): LayerStates {
    return gqaStates(this.spec);
  }

  forward(h: Float32Array, ctx: ForwardContext, storage: LayerStorage): Float32Array {
    const { batch, pool } = ctx;
    const spec = this.spec;
    const aw = this.weights;
    const T = batch.tokens.length;
    const { numHeads, numKvHeads, headDim, vHeadDim } = spec;
    const q = stepArrayToFill(ctx, Float32Array, T * numHeads * headDim);
    const k = stepArrayToFill(ctx, Float32Array, T * numKvHeads * headDim);
    const v = stepArrayToFill(ctx, Float32Array, T * numKvHeads * vHeadDim);
    pool.matmulMany(h, T, [aw.q, aw.k, aw.v], [q, k, v]);
    if (aw.qBias) addBias(q, aw.qBias, T);
    if (aw.kBias) addBias(k, aw.kBias, T);
    if (aw.vBias) addBias(v, aw.vBias, T);
    if (spec.valueScale !== undefined && spec.valueScale !== 1) scaleInto(v, spec.valueScale);
    if (aw.qNorm) rmsNorm(q, T * numHeads, headDim, aw.qNorm, this.normEps);
    if (aw.kNorm) rmsNorm(k, T * numKvHeads, headDim, aw.kNorm, this.normEps);
    const cache = storage.kv("kv");
    const { group, placement } = cache;
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      this.rope.apply(q, t * numHeads * headDim, numHeads, headDim, pos);
      this.rope.apply(k, t * numKvHeads * headDim, numKvHeads, headDim, pos);
      const blocks = (batch.blockTables[t] as readonly (readonly number[])[])[group] as readonly number[];
      cache.write(placement.slot(blocks, pos), k, t * numKvHeads * headDim, v, t * numKvHeads * vHeadDim);
    }
    const { meta, tables } = pagedTables(batch, placement, group, stepArray(ctx, Int32Array, 3 * T));
    // Attention writes every value of every token's heads.
    const out = stepArrayToFill(ctx, Float32Array, T * numHeads * vHeadDim);
    pool.attention({
      meta,
      tables,
      blockSize: placement.blockSize,
      ringBlocks: placement.ringBlocks,
      q,
      out,
      keys: cache.keys,
      values: cache.values,
      numHeads,
      numKvHeads,
      headDim,
      vHeadDim,
      scale: 1 / Math.sqrt(headDim),
      sinks: aw.sinks ?? null,
    });
    const o = stepArrayToFill(ctx, Float32Array, T * this.hiddenSize);
    pool.matmul(out, T, aw.o, o);
    if (aw.oBias) addBias(o, aw.oBias, T);
    return o;
  }
}

/** What an attention layer of `spec` keeps per token: its keys and values (`kv`), every position or a window. */
export function gqaStates(spec: AttentionSpec): { readonly kv: AttentionState } {
  const { numKvHeads, headDim, vHeadDim } = spec;
  return {
    kv:
      spec.kind === "sliding"
        ? { kind: "sliding-window", window: spec.window, numKvHeads, headDim, vHeadDim }
        : { kind: "full", numKvHeads, headDim, vHeadDim },
  };
}

function scaleInto(x: Float32Array, factor: number): void {
  for (let i = 0; i < x.length; i++) x[i] = (x[i] as number) * factor;
}

/** Adds `bias` to each of the first `rows` rows of x (rows of bias.length). */
export function addBias(x: Float32Array, bias: Float32Array, rows: number): void {
  const n = bias.length;
  for (let r = 0; r < rows; r++) addInto(x.subarray(r * n, (r + 1) * n), bias);
}
