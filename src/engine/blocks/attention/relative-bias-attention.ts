/**
 * Attention without rotary embeddings: each head adds a learned logit per relative-distance bucket
 * to its scaled q·k (T5's `relative_attention_bias`, bucketed by relative-position-buckets.ts), and
 * the keys and values pass through short causal depthwise convolutions over the sequence before
 * they are cached (the public Inkling code's `k_sconv` / `v_sconv`, fla's `ShortConvolution` with no
 * activation), whose last kernel − 1 inputs are kept per sequence.
 *
 * Tensors under `<prefix>.self_attn`: q_proj, k_proj, v_proj, o_proj (no biases), k_sconv.weight and
 * v_sconv.weight [numKvHeads · headDim, 1, kernel] (nn.Conv1d's depthwise layout), and
 * relative_attention_bias.weight [numBuckets, numHeads] (T5's nn.Embedding layout: row b holds every
 * head's logit of bucket b). Every layer has its own bias table (T5 shares layer 0's across layers).
 */
import type { ConvTailState, FullAttentionState, LayerStates } from "../../cache/state-spec.js";
import type { LayerStorage } from "../../cache/storage.js";
import {
  AttentionScratch,
  pagedAttention,
  type RelativeBias,
} from "../../kernels/paged-attention/paged-attention.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext, TokenMixer } from "../../model/model.js";
import type { Weight } from "../../tensor/weight.js";
import { shortConv } from "../conv/short-conv.js";
import { bindParameters, f32Param, matrixParam } from "../parameters.js";
import { relativeBucketTable } from "./relative-position-buckets.js";

export interface RelativeAttentionSpec {
  readonly numHeads: number;
  readonly numKvHeads: number;
  /** Query, key and value head size. */
  readonly headDim: number;
  /** relative_attention_num_buckets. */
  readonly numBuckets: number;
  /** relative_attention_max_distance: from this distance on every key shares the last bucket. */
  readonly maxDistance: number;
  /** sconv_kernel_size: inputs each key/value convolution spans, the current one included. */
  readonly convKernel: number;
}

/** Checkpoint names of one layer's tensors: the projections' bases (`.weight` appended), the rest whole. */
export interface RelativeAttentionNames {
  readonly q: string;
  readonly k: string;
  readonly v: string;
  readonly o: string;
  readonly kConv: string;
  readonly vConv: string;
  readonly bias: string;
}

export function relativeAttentionNames(prefix: string): RelativeAttentionNames {
  const p = `${prefix}.self_attn`;
  return {
    q: `${p}.q_proj`,
    k: `${p}.k_proj`,
    v: `${p}.v_proj`,
    o: `${p}.o_proj`,
    kConv: `${p}.k_sconv.weight`,
    vConv: `${p}.v_sconv.weight`,
    bias: `${p}.relative_attention_bias.weight`,
  };
}

/** Every tensor the layer reads, with its shape and tiny initialisation. */
export function relativeAttentionParameters(
  names: RelativeAttentionNames,
  spec: RelativeAttentionSpec,
  hidden: number,
) {
  const { numHeads: nh, numKvHeads: nkv, headDim: d, numBuckets, convKernel: K } = spec;
  return {
    q: matrixParam(names.q, nh * d, hidden),
    k: matrixParam(names.k, nkv * d, hidden),
    v: matrixParam(names.v, nkv * d, hidden),
    o: matrixParam(names.o, hidden, nh * d),
    kConv: f32Param(names.kConv, [nkv * d, 1, K], "fan-in"),
    vConv: f32Param(names.vConv, [nkv * d, 1, K], "fan-in"),
    bias: f32Param(names.bias, [numBuckets, nh], "fan-in"),
  };
}

/** What the layer keeps: every position's keys and values, and each convolution's tail per sequence. */
export function relativeAttentionStates(spec: RelativeAttentionSpec): {
  readonly kv: FullAttentionState;
  readonly kConv: ConvTailState;
  readonly vConv: ConvTailState;
} {
  const { numKvHeads, headDim, convKernel: kernel } = spec;
  const tail: ConvTailState = { kind: "conv-tail", channels: numKvHeads * headDim, kernel };
  return { kv: { kind: "full", numKvHeads, headDim, vHeadDim: headDim }, kConv: tail, vConv: tail };
}

export interface RelativeAttentionWeights {
  readonly q: Weight;
  readonly k: Weight;
  readonly v: Weight;
  readonly o: Weight;
  /** [channels, kernel]. */
  readonly kConv: Float32Array;
  readonly vConv: Float32Array;
  /** [numBuckets, numHeads], as stored. */
  readonly bias: Float32Array;
}

/**
 * The layer's forward: q/k/v projections; per sequence, k and v through their convolutions from
 * the carried tails (zeroed at position 0); keys and values cached; each query attends to every
 * earlier position with the bias of the distance's bucket added (kernels/paged-attention's scalar
 * reference); o_proj.
 */
export class RelativeBiasAttention implements TokenMixer {
  readonly outputTensors: readonly string[];
  private readonly relativeBias: RelativeBias;
  private readonly scratch = new AttentionScratch();

  constructor(
    readonly spec: RelativeAttentionSpec,
    readonly weights: RelativeAttentionWeights,
    readonly names: RelativeAttentionNames,
  ) {
    this.outputTensors = [`${names.o}.weight`];
    const { numHeads: nh, numBuckets: nb } = spec;
    const logits = new Float32Array(nh * nb);
    for (let b = 0; b < nb; b++)
      for (let h = 0; h < nh; h++) logits[h * nb + b] = weights.bias[b * nh + h] as number;
    this.relativeBias = { logits, numBuckets: nb, buckets: relativeBucketTable(nb, spec.maxDistance) };
  }

  /** Reads the layer's tensors by `names`; a shape that disagrees with `spec` is refused naming the tensor. */
  static load(
    w: WeightSource,
    names: RelativeAttentionNames,
    spec: RelativeAttentionSpec,
    hidden: number,
  ): RelativeBiasAttention {
    return new RelativeBiasAttention(
      spec,
      bindParameters(w, relativeAttentionParameters(names, spec, hidden)),
      names,
    );
  }

  states(): LayerStates {
    return relativeAttentionStates(this.spec);
  }

  forward(h: Float32Array, ctx: ForwardContext, storage: LayerStorage): Float32Array {
    const { batch, pool } = ctx;
    const { numHeads: nh, numKvHeads: nkv, headDim: d, convKernel: K } = this.spec;
    const aw = this.weights;
    const T = batch.tokens.length;
    const C = nkv * d;
    const q = new Float32Array(T * nh * d);
    const kIn = new Float32Array(T * C);
    const vIn = new Float32Array(T * C);
    pool.matmulMany(h, T, [aw.q, aw.k, aw.v], [q, kIn, vIn]);
    const k = new Float32Array(T * C);
    const v = new Float32Array(T * C);
    const kTails = storage.slots("kConv");
    const vTails = storage.slots("vConv");
    for (const run of batch.sequences) {
      const kTail = kTails.view(run.slot);
      const vTail = vTails.view(run.slot);
      if ((batch.positions[run.first] as number) === 0) {
        kTail.fill(0);
        vTail.fill(0);
      }
      const span = (a: Float32Array) => a.subarray(run.first * C, (run.first + run.count) * C);
      shortConv(span(kIn), aw.kConv, kTail, run.count, C, K, span(k), false);
      shortConv(span(vIn), aw.vConv, vTail, run.count, C, K, span(v), false);
    }
    const cache = storage.kv("kv");
    const blocksOf = (t: number) =>
      (batch.blockTables[t] as readonly (readonly number[])[])[cache.group] as readonly number[];
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      cache.write(cache.placement.slot(blocksOf(t), pos), k, t * C, v, t * C);
    }
    const out = new Float32Array(T * nh * d);
    const params = { numHeads: nh, scale: 1 / Math.sqrt(d), relativeBias: this.relativeBias };
    for (let t = 0; t < T; t++) {
      const query = {
        q,
        qOffset: t * nh * d,
        blocks: blocksOf(t),
        pos: batch.positions[t] as number,
        out,
        outOffset: t * nh * d,
      };
      pagedAttention(query, cache, params, this.scratch);
    }
    const o = new Float32Array(T * aw.o.rows);
    pool.matmul(out, T, aw.o, o);
    return o;
  }
}
