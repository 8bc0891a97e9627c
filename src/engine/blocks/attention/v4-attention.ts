import { BringupError } from "../../../common/errors.js";
import type { LayerStates, SlidingWindowState } from "../../cache/state-spec.js";
import type { LayerStorage, PagedRows } from "../../cache/storage.js";
import { rmsNorm } from "../../kernels/rmsnorm.js";
import { Rope, type YarnScaling } from "../../kernels/rope.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext, TokenMixer } from "../../model/model.js";
import type { ModelSwitch } from "../../model/model-switch.js";
import { stepArray } from "../../model/step-scratch.js";
import { f32Weight, type Weight } from "../../tensor/weight.js";
import { bindParameters, declared, f32Param, matrixParam, type ParameterDecl } from "../parameters.js";
import { attendV4, V4KeyGather } from "./v4-attend.js";
import {
  Compressor,
  type CompressorNames,
  type CompressorSpec,
  compressorNames,
  compressorParameters,
  seriesWidth,
  tableOf,
} from "./v4-compressor.js";
import {
  V4Indexer,
  type V4IndexerNames,
  type V4IndexerSpec,
  v4IndexerCompressor,
  v4IndexerNames,
  v4IndexerParameters,
} from "./v4-indexer.js";

/**
 * DeepSeek-V4's attention (HF transformers `models/deepseek_v4`, `DeepseekV4Attention`), one of
 * three kinds per layer (config `layer_types`):
 * - "sliding" (`sliding_attention`): each query attends to the last `window` positions;
 * - "csa" (`compressed_sparse_attention`): besides, to the `indexer.topK` compressed rows its
 *   indexer picks among the overlapping rows of `compressRatio` positions;
 * - "hca" (`heavily_compressed_attention`): besides, to every compressed row (no overlap, a large
 *   ratio).
 * One key head of `headDim` is shared by every query head and is also the value (K = V). Queries
 * go through a low-rank latent (q_a_proj, its norm, q_b_proj) and an unweighted per-head norm; the
 * trailing `ropeDim` features of queries, keys and rows are rotated in adjacent pairs, and rotated
 * back at the query's position on the output (so a value's rotation cancels). A learned sink per
 * head joins each softmax; the output projection is grouped: `oGroups` groups of heads each to
 * `oLoraRank` features (o_a_proj), then one matrix to the hidden size (o_b_proj).
 *
 * Where vLLM's `deepseek_v4` differs (layers/deepseek_v4_attention.py): it keeps the window's keys in
 * FP8 (the rotated part in bf16) and quantizes the output to FP8 as it rotates it back, before a
 * grouped FP8 einsum for o_a_proj; it builds a compressor only for a ratio above 1. This block keeps
 * f32 throughout, as HF's eager attention computes.
 */
export interface V4AttentionSpec {
  readonly kind: "sliding" | "csa" | "hca";
  readonly numHeads: number;
  readonly headDim: number;
  readonly ropeDim: number;
  readonly qLoraRank: number;
  readonly window: number;
  readonly oGroups: number;
  readonly oLoraRank: number;
  /** RoPE base: `rope_theta` for sliding layers, `compress_rope_theta` for the others. */
  readonly ropeTheta: number;
  readonly yarn?: YarnScaling;
  /** Positions per compressed row; 0 in sliding layers. */
  readonly compressRatio: number;
  /** csa layers only. */
  readonly indexer?: V4IndexerSpec;
  readonly normEps: number;
}

export interface V4AttentionNames {
  readonly qA: string;
  readonly qANorm: string;
  readonly qB: string;
  readonly kv: string;
  readonly kvNorm: string;
  readonly oA: string;
  readonly oB: string;
  readonly sinks: string;
  readonly compressor: CompressorNames;
  readonly indexer: V4IndexerNames;
}

/** HF's names under `<prefix>.self_attn`. */
export function v4AttentionNames(prefix: string): V4AttentionNames {
  const p = `${prefix}.self_attn`;
  return {
    qA: `${p}.q_a_proj`,
    qANorm: `${p}.q_a_norm.weight`,
    qB: `${p}.q_b_proj`,
    kv: `${p}.kv_proj`,
    kvNorm: `${p}.kv_norm.weight`,
    oA: `${p}.o_a_proj`,
    oB: `${p}.o_b_proj`,
    sinks: `${p}.sinks`,
    compressor: compressorNames(`${p}.compressor`),
    indexer: v4IndexerNames(p),
  };
}

/** The layer's compressor, if it has one (csa: overlapping rows; hca: not). */
function v4Compressor(spec: V4AttentionSpec): CompressorSpec | undefined {
  if (spec.kind === "sliding") return undefined;
  return {
    width: spec.headDim,
    ratio: spec.compressRatio,
    overlap: spec.kind === "csa",
    ropeDim: spec.ropeDim,
  };
}

/** The attention's own parameters (its compressor's and indexer's are theirs). */
function ownParameters(names: V4AttentionNames, spec: V4AttentionSpec, hidden: number) {
  const { numHeads: nh, headDim: d, qLoraRank: r, oGroups: g, oLoraRank: or } = spec;
  return {
    qA: matrixParam(names.qA, r, hidden),
    qANorm: f32Param(names.qANorm, [r], "ones"),
    qB: matrixParam(names.qB, nh * d, r),
    kv: matrixParam(names.kv, d, hidden),
    kvNorm: f32Param(names.kvNorm, [d], "ones"),
    // Read in f32 and split by group of heads.
    oA: f32Param(`${names.oA}.weight`, [g * or, (nh * d) / g], "fan-in"),
    oB: matrixParam(names.oB, hidden, g * or),
    sinks: f32Param(names.sinks, [nh], "fan-in"),
  };
}

/**
 * One V4 attention layer's parameters by block: its own, its compressor's (csa and hca layers) and
 * its indexer's with the indexer's compressor (csa layers).
 */
export function v4AttentionRoles(names: V4AttentionNames, spec: V4AttentionSpec, hidden: number) {
  checkSpec(spec);
  const compressor = v4Compressor(spec);
  return {
    own: ownParameters(names, spec, hidden),
    compressor: compressor ? compressorParameters(names.compressor, compressor, hidden) : undefined,
    indexer: spec.indexer
      ? {
          own: v4IndexerParameters(names.indexer, spec.indexer, hidden, spec.qLoraRank),
          compressor: compressorParameters(names.indexer.compressor, indexerCompressor(spec), hidden),
        }
      : undefined,
  };
}

/** Every parameter of one V4 attention layer: what loading reads and a tiny model draws. */
export function v4AttentionParameters(
  names: V4AttentionNames,
  spec: V4AttentionSpec,
  hidden: number,
): ParameterDecl[] {
  const { own, compressor, indexer } = v4AttentionRoles(names, spec, hidden);
  return [
    ...declared(own),
    ...(compressor ? declared(compressor) : []),
    ...(indexer ? [...declared(indexer.compressor), ...declared(indexer.own)] : []),
  ];
}

/**
 * v4_attention: the model's attention ("sparse": each layer's window plus its compressed rows), or
 * every layer attending to every earlier position's key ("dense"): the same weights with full
 * causal attention, the baseline the port's perplexity gate holds the sparse form to.
 */
export const V4_ATTENTION_SWITCH: ModelSwitch = {
  name: "v4_attention",
  values: ["sparse", "dense"],
  default: "sparse",
  description:
    "DeepSeek-V4 attention as the model defines it (sliding window plus compressed rows), or dense causal attention over every earlier key",
};

function dense(switches: ReadonlyMap<string, string>): boolean {
  return switches.get(V4_ATTENTION_SWITCH.name) === "dense";
}

/**
 * What a V4 layer keeps per sequence: its keys (`kv`, one head, K = V so no values) as a ring of
 * the window; with a compressor, each position's compressor projections (`compressorSource`, the
 * window not yet pooled; kept as a ring as long as the attention's, so it shares its block tables
 * and chunking) and the compressed rows (`compressed`); with an indexer, the same for its keys.
 * Under v4_attention=dense, every position's key alone.
 */
export function v4AttentionStates(spec: V4AttentionSpec, switches: ReadonlyMap<string, string>): LayerStates {
  if (dense(switches)) return { kv: { kind: "full", numKvHeads: 1, headDim: spec.headDim, vHeadDim: 0 } };
  const ring = (headDim: number, vHeadDim: number): SlidingWindowState => ({
    kind: "sliding-window",
    window: sourceWindow(spec),
    numKvHeads: 1,
    headDim,
    vHeadDim,
  });
  const compressor = v4Compressor(spec);
  return {
    kv: { kind: "sliding-window", window: spec.window, numKvHeads: 1, headDim: spec.headDim, vHeadDim: 0 },
    ...(compressor
      ? {
          compressorSource: ring(seriesWidth(compressor), seriesWidth(compressor)),
          compressed: { kind: "compressed", width: compressor.width, ratio: compressor.ratio },
        }
      : {}),
    ...(spec.indexer
      ? {
          indexerSource: ring(2 * spec.indexer.headDim, 2 * spec.indexer.headDim),
          indexerKeys: { kind: "compressed", width: spec.indexer.headDim, ratio: spec.compressRatio },
        }
      : {}),
  };
}

/** A compressor reads the last 2 x ratio positions (csa) or ratio (hca); the ring is at least the window. */
function sourceWindow(spec: V4AttentionSpec): number {
  return Math.max(spec.window, spec.kind === "csa" ? 2 * spec.compressRatio : spec.compressRatio);
}

function indexerCompressor(spec: V4AttentionSpec): CompressorSpec {
  return v4IndexerCompressor(spec.indexer as V4IndexerSpec, spec.compressRatio, spec.ropeDim);
}

/** Refuses a spec the layer cannot run, naming the config field. */
function checkSpec(spec: V4AttentionSpec): void {
  const bad = (field: string, why: string): never => {
    throw new BringupError(
      "MODEL_CONFIG_INVALID",
      `DeepSeek-V4 attention: ${why}; fix config.json's ${field}.`,
      {
        subject: field,
      },
    );
  };
  if ((spec.numHeads * spec.headDim) % spec.oGroups !== 0)
    bad(
      "o_groups",
      `${spec.numHeads} heads of ${spec.headDim} do not split into ${spec.oGroups} equal groups`,
    );
  if (spec.ropeDim % 2 !== 0 || spec.ropeDim > spec.headDim)
    bad(
      "qk_rope_head_dim",
      `the rotated part (${spec.ropeDim}) must be even and within head_dim ${spec.headDim}`,
    );
  if (spec.kind !== "sliding" && !(Number.isInteger(spec.compressRatio) && spec.compressRatio >= 1))
    bad(
      "compress_rates",
      `a ${spec.kind} layer needs a whole compression ratio >= 1, got ${spec.compressRatio}`,
    );
  if ((spec.kind === "csa") !== (spec.indexer !== undefined))
    bad("layer_types", "compressed sparse attention layers, and only they, have an indexer");
  if (spec.indexer && spec.ropeDim > spec.indexer.headDim)
    bad(
      "index_head_dim",
      `the indexer head (${spec.indexer.headDim}) is narrower than the rotated part (${spec.ropeDim})`,
    );
}

export interface V4AttentionWeights {
  readonly qA: Weight;
  readonly qANorm: Float32Array;
  readonly qB: Weight;
  readonly kv: Weight;
  readonly kvNorm: Float32Array;
  /** o_a_proj's rows of each group: [oLoraRank, heads x headDim / oGroups] each. */
  readonly oA: readonly Weight[];
  readonly oB: Weight;
  readonly sinks: Float32Array;
}

/** One V4 attention layer over its paged states (see V4AttentionSpec). */
export class V4Attention implements TokenMixer {
  readonly outputTensors: readonly string[];
  private readonly rope: Rope;
  private readonly ones: Float32Array;
  /** The step's window keys and compressed rows gathered for the pool's attention kernel. */
  private readonly gather = new V4KeyGather();

  constructor(
    readonly spec: V4AttentionSpec,
    readonly weights: V4AttentionWeights,
    readonly names: V4AttentionNames,
    private readonly hiddenSize: number,
    readonly compressor?: Compressor,
    readonly indexer?: V4Indexer,
  ) {
    checkSpec(spec);
    this.outputTensors = [`${names.oB}.weight`];
    this.rope = new Rope(spec.ropeDim, 1, spec.ropeTheta, spec.yarn);
    this.ones = new Float32Array(spec.headDim).fill(1);
  }

  /** Reads the layer's tensors by `names`, shapes from `spec`; o_a_proj is read in f32 and split by group. */
  static load(w: WeightSource, names: V4AttentionNames, spec: V4AttentionSpec, hidden: number): V4Attention {
    checkSpec(spec);
    const { numHeads: nh, headDim: d, qLoraRank: r, oGroups: g, oLoraRank: or } = spec;
    const { oA, ...rest } = bindParameters(w, ownParameters(names, spec, hidden));
    const weights: V4AttentionWeights = { ...rest, oA: groupRows(oA, g, or, (nh * d) / g) };
    const rope = new Rope(spec.ropeDim, 1, spec.ropeTheta, spec.yarn);
    const compressorSpec = v4Compressor(spec);
    const compressor = compressorSpec
      ? Compressor.load(w, names.compressor, compressorSpec, hidden, rope, spec.normEps)
      : undefined;
    const indexer = spec.indexer
      ? V4Indexer.load(w, names.indexer, spec.indexer, indexerCompressor(spec), hidden, r, rope, spec.normEps)
      : undefined;
    return new V4Attention(spec, weights, names, hidden, compressor, indexer);
  }

  states(switches: ReadonlyMap<string, string>): LayerStates {
    return v4AttentionStates(this.spec, switches);
  }

  forward(h: Float32Array, ctx: ForwardContext, storage: LayerStorage): Float32Array {
    const { batch, pool } = ctx;
    const { numHeads: nh, headDim: d, ropeDim, qLoraRank: r, normEps } = this.spec;
    const w = this.weights;
    const T = batch.tokens.length;
    const qLatent = stepArray(ctx, Float32Array, T * r);
    const kv = stepArray(ctx, Float32Array, T * d);
    pool.matmulMany(h, T, [w.qA, w.kv], [qLatent, kv]);
    rmsNorm(qLatent, T, r, w.qANorm, normEps);
    rmsNorm(kv, T, d, w.kvNorm, normEps);
    const q = stepArray(ctx, Float32Array, T * nh * d);
    pool.matmul(qLatent, T, w.qB, q);
    rmsNorm(q, T * nh, d, this.ones, normEps);
    const keys = storage.kv("kv");
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      for (let hd = 0; hd < nh; hd++)
        this.rope.rotateAdjacentPairs(q, (t * nh + hd) * d + d - ropeDim, ropeDim, pos);
      this.rope.rotateAdjacentPairs(kv, t * d + d - ropeDim, ropeDim, pos);
      keys.write(keys.placement.slot(tableOf(batch, t, keys.group), pos), kv, t * d, kv, 0);
    }
    const sparse = !dense(ctx.switches);
    let rows: PagedRows | undefined;
    if (this.compressor && sparse) {
      rows = storage.rows("compressed");
      const [c, z] = this.compressor.project(h, T, ctx);
      this.compressor.update(batch, c, z, storage.kv("compressorSource"), rows);
    }
    const chosen = (sparse ? this.indexer : undefined)?.select(
      h,
      qLatent,
      ctx,
      storage.kv("indexerSource"),
      storage.rows("indexerKeys"),
    );
    const out = stepArray(ctx, Float32Array, T * nh * d);
    attendV4(
      pool,
      {
        batch,
        q,
        out,
        numHeads: nh,
        headDim: d,
        sinks: this.weights.sinks,
        keys,
        ratio: this.spec.compressRatio,
        ...(rows ? { rows } : {}),
        ...(chosen ? { picked: chosen } : {}),
      },
      this.gather,
    );
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      for (let hd = 0; hd < nh; hd++)
        this.rope.rotateAdjacentPairs(out, (t * nh + hd) * d + d - ropeDim, ropeDim, pos, true);
    }
    return this.project(out, T, ctx);
  }

  /** The grouped output projection: each group of heads through its o_a_proj rows, then o_b_proj. */
  private project(out: Float32Array, T: number, ctx: ForwardContext): Float32Array {
    const { numHeads: nh, headDim: d, oGroups: g, oLoraRank: or } = this.spec;
    const perGroup = (nh * d) / g;
    const mid = stepArray(ctx, Float32Array, T * g * or);
    const x = stepArray(ctx, Float32Array, T * perGroup);
    const y = stepArray(ctx, Float32Array, T * or);
    for (let gi = 0; gi < g; gi++) {
      for (let t = 0; t < T; t++)
        x.set(out.subarray(t * nh * d + gi * perGroup, t * nh * d + (gi + 1) * perGroup), t * perGroup);
      ctx.pool.matmul(x, T, this.weights.oA[gi] as Weight, y);
      for (let t = 0; t < T; t++) mid.set(y.subarray(t * or, (t + 1) * or), (t * g + gi) * or);
    }
    const o = stepArray(ctx, Float32Array, T * this.hiddenSize);
    ctx.pool.matmul(mid, T, this.weights.oB, o);
    return o;
  }
}

/** o_a_proj [groups x rows, cols] as one f32 matrix per group. */
function groupRows(data: Float32Array, groups: number, rows: number, cols: number): Weight[] {
  return Array.from({ length: groups }, (_, gi) =>
    f32Weight(rows, cols, data.slice(gi * rows * cols, (gi + 1) * rows * cols)),
  );
}
