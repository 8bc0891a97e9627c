import { BringupError } from "../../../common/errors.js";
import type { LayerStates } from "../../cache/state-spec.js";
import type { LayerStorage, PagedKv, PagedRows } from "../../cache/storage.js";
import { weightAt } from "../../kernels/reference.js";
import { rmsNorm } from "../../kernels/rmsnorm.js";
import { Rope, type YarnScaling, yarnSoftmaxScale } from "../../kernels/rope.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext, SequenceRun, TokenMixer } from "../../model/model.js";
import type { ModelSwitch } from "../../model/model-switch.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, f32Param, matrixParam } from "../parameters.js";
import type { DsaIndexer, DsaSpec } from "./dsa-indexer.js";
import type { SharedTopK } from "./shared-top-k.js";

/**
 * Multi-head latent attention (DeepSeek-V2/V3, deepseek-ai/DeepSeek-V3 `inference/model.py`): one
 * layer's sizes. Keys and values are compressed into a latent of `kvLoraRank` features per token
 * plus one rotary key of `qkRopeHeadDim` shared by every head; only those are cached.
 */
export interface MlaSpec {
  readonly numHeads: number;
  /** 0: queries straight from the hidden state (`q_proj`); else through q_a_proj, its norm and q_b_proj. */
  readonly qLoraRank: number;
  readonly kvLoraRank: number;
  readonly qkNopeHeadDim: number;
  readonly qkRopeHeadDim: number;
  readonly vHeadDim: number;
  /**
   * RoPE base of the rotary part; absent, that part is left unrotated (Kimi Linear's MLA layers,
   * `mla_use_nope`: positions reach them only through the linear-attention layers).
   */
  readonly ropeTheta?: number;
  /**
   * YaRN context extension of the rotary part (the config's `rope_scaling`): its frequencies and
   * cos/sin factor, and the softmax scale it multiplies by yarnSoftmaxScale (DeepSeek-V3's mscale).
   */
  readonly ropeScaling?: YarnScaling;
  /**
   * The config's `rope_interleave` (default true): the rotary part's pairing the model declares as
   * the `mla_rope` switch's default (mlaRopeSwitch).
   */
  readonly ropeInterleave?: boolean;
}

/** Checkpoint names (bases without `.weight`) of one MLA layer, HF DeepSeek-V3's under `self_attn`. */
export interface MlaNames {
  readonly q: string;
  readonly qA: string;
  readonly qANorm: string;
  readonly qB: string;
  readonly kvA: string;
  readonly kvANorm: string;
  readonly kvB: string;
  readonly o: string;
}

export function mlaNames(prefix: string): MlaNames {
  const p = `${prefix}.self_attn`;
  return {
    q: `${p}.q_proj`,
    qA: `${p}.q_a_proj`,
    qANorm: `${p}.q_a_layernorm.weight`,
    qB: `${p}.q_b_proj`,
    kvA: `${p}.kv_a_proj_with_mqa`,
    kvANorm: `${p}.kv_a_layernorm.weight`,
    kvB: `${p}.kv_b_proj`,
    o: `${p}.o_proj`,
  };
}

/** [rows, cols] of each MLA projection for `spec` at hidden size `hidden` (q_a/q_b only with q_lora_rank). */
export function mlaShapes(spec: MlaSpec, hidden: number) {
  const {
    numHeads: nh,
    qLoraRank: r,
    kvLoraRank: C,
    qkNopeHeadDim: dn,
    qkRopeHeadDim: dr,
    vHeadDim: dv,
  } = spec;
  return {
    q: [nh * (dn + dr), hidden],
    qA: [r, hidden],
    qB: [nh * (dn + dr), r],
    kvA: [C + dr, hidden],
    kvB: [nh * (dn + dv), C],
    o: [hidden, nh * dv],
  } as const;
}

/** The parameters of one MLA layer under `names`: what loading reads and a tiny model draws. */
export function mlaParameters(names: MlaNames, spec: MlaSpec, hidden: number) {
  const shape = mlaShapes(spec, hidden);
  const lora = spec.qLoraRank > 0;
  return {
    q: lora ? undefined : matrixParam(names.q, ...shape.q),
    qA: lora ? matrixParam(names.qA, ...shape.qA) : undefined,
    qANorm: lora ? f32Param(names.qANorm, [spec.qLoraRank], "ones") : undefined,
    qB: lora ? matrixParam(names.qB, ...shape.qB) : undefined,
    kvA: matrixParam(names.kvA, ...shape.kvA),
    kvANorm: f32Param(names.kvANorm, [spec.kvLoraRank], "ones"),
    kvB: matrixParam(names.kvB, ...shape.kvB),
    o: matrixParam(names.o, ...shape.o),
  };
}

export interface MlaWeights {
  /** q_proj, or q_a_proj + q_a_layernorm + q_b_proj. */
  readonly q?: Weight;
  readonly qA?: Weight;
  readonly qANorm?: Float32Array;
  readonly qB?: Weight;
  readonly kvA: Weight;
  readonly kvANorm: Float32Array;
  /** [numHeads x (qkNope + v), kvLoraRank]: each head's key up-projection rows, then its value rows. */
  readonly kvB: Weight;
  readonly o: Weight;
}

/**
 * How MLA reads its latent cache, per engine (`--switch mla_form=...`):
 * - absorbed: every token folds kv_b_proj's key rows into its query and its value rows after the
 *   weighted sum of latents, so attention runs over the cached latent itself;
 * - expanded: every token attends to per-head keys and values expanded from the cached latents
 *   through kv_b_proj (one matmul over the sequence's positions);
 * - prefill-expanded: runs of more than one token expand, single-token decode steps absorb (as
 *   vLLM runs MLA); equal to the others within rounding, not bit for bit, so a token's bits then
 *   depend on how its prompt was chunked.
 */
export const MLA_SWITCHES: readonly ModelSwitch[] = [
  {
    name: "mla_form",
    values: ["absorbed", "expanded", "prefill-expanded"],
    default: "absorbed",
    description:
      "latent attention: absorb the up-projections into query and output, expand the latent into per-head keys and values, or expand for prefill and absorb for decode",
  },
];

/**
 * How latent attention pairs the rotary features (`--switch mla_rope=...`), where public sources
 * disagree: "interleaved" rotates adjacent pairs (2i, 2i+1), as DeepSeek's `inference/model.py`
 * (complex multiplication), vLLM's DeepSeek-V2/V3 and GLM-5 code (is_neox_style false) and a
 * config's `rope_interleave: true` do; "half-split" rotates i with i + qk_rope_head_dim/2, as HF
 * transformers' `glm_moe_dsa` does to GLM-5's main attention whatever the config says. The
 * default is the config's (`spec.ropeInterleave`, true when absent): the engine follows the
 * config and the code the checkpoints were served with; half-split reproduces HF's GLM-5.
 */
export function mlaRopeSwitch(spec: MlaSpec): ModelSwitch {
  return {
    name: "mla_rope",
    values: ["interleaved", "half-split"],
    default: spec.ropeInterleave === false ? "half-split" : "interleaved",
    description:
      "latent attention's RoPE pairing: adjacent features as DeepSeek's and vLLM's code (the config's rope_interleave: true), or the first half against the second as HF's glm_moe_dsa",
  };
}

/**
 * What MLA keeps per token (`--switch mla_cache=...`), for comparing KV capacity in one budget:
 * - latent: the normalized latent and the shared rotary key (kv_lora_rank + qk_rope_head_dim);
 * - per-head: every head's full key (nope and rope parts) and value, as an engine without MLA
 *   support stores this model (heads x (qk_nope + qk_rope + v_head)), attended as ordinary
 *   multi-head attention; mla_form then has nothing to choose. Each key and value is the expanded
 *   form's, so outputs equal mla_form=expanded bit for bit. Not with DSA's indexer, whose key
 *   shares the latent's cache rows.
 */
export const MLA_CACHE_SWITCH: ModelSwitch = {
  name: "mla_cache",
  values: ["latent", "per-head"],
  default: "latent",
  description:
    "latent attention's cache: the latent and shared rotary key per token, or every head's key and value as a stock engine keeps them",
};

/**
 * What an MLA layer of `spec` keeps per token under `switches`: its `latent` row (the normalized
 * latent and the rotated shared key) and, with DSA's indexer of `indexer`, its `indexerKeys`; or
 * under mla_cache=per-head every head's key and value as ordinary attention (`kv`).
 */
export function mlaStates(
  spec: MlaSpec,
  indexer: DsaSpec | undefined,
  switches: ReadonlyMap<string, string>,
): LayerStates {
  const { numHeads, kvLoraRank, qkNopeHeadDim, qkRopeHeadDim, vHeadDim } = spec;
  if (perHeadCache(switches, indexer)) {
    return { kv: { kind: "full", numKvHeads: numHeads, headDim: qkNopeHeadDim + qkRopeHeadDim, vHeadDim } };
  }
  return {
    latent: { kind: "latent", latentDim: kvLoraRank, ropeDim: qkRopeHeadDim },
    ...(indexer !== undefined ? { indexerKeys: { kind: "indexer-keys", headDim: indexer.headDim } } : {}),
  };
}

/** Whether `switches` ask for per-head K/V (refused beside DSA's indexer, which reads the latent's tables). */
function perHeadCache(switches: ReadonlyMap<string, string>, indexer: DsaSpec | undefined): boolean {
  if (switches.get(MLA_CACHE_SWITCH.name) !== "per-head") return false;
  if (indexer !== undefined) {
    throw new BringupError(
      "ENGINE_OPTIONS_INVALID",
      "mla_cache=per-head does not combine with DSA's indexer, whose keys are kept beside the latent; use mla_cache=latent.",
      { subject: MLA_CACHE_SWITCH.name },
    );
  }
  return true;
}

/**
 * Multi-head latent attention over a paged cache holding, per token, only the normalized latent
 * and the rotated shared key (one row of kvLoraRank + qkRopeHeadDim); with a DSA indexer
 * (dsa-indexer.ts) its keys are a second paged state and each query attends only to the
 * positions the indexer picks. RoPE rotates adjacent feature pairs, as DeepSeek's complex form
 * does, or the first half against the second under mla_rope=half-split (mlaRopeSwitch).
 */
export class MlaAttention implements TokenMixer {
  readonly outputTensors: readonly string[];
  /** kv_b_proj in f32, read by the absorbed form's per-head folds. */
  private readonly kvB: Float32Array;
  private readonly rope: Rope | undefined;
  readonly scale: number;

  constructor(
    readonly spec: MlaSpec,
    readonly weights: MlaWeights,
    readonly names: MlaNames,
    private readonly hiddenSize: number,
    private readonly normEps: number,
    readonly indexer?: DsaIndexer,
    /** GLM's indexer_types: with an indexer, publish its choice here; without one, attend the published. */
    private readonly sharedTopK?: SharedTopK,
  ) {
    const R = spec.qkRopeHeadDim;
    this.outputTensors = [`${names.o}.weight`];
    const yarn = spec.ropeScaling;
    this.rope = spec.ropeTheta === undefined ? undefined : new Rope(R, 1, spec.ropeTheta, yarn);
    this.scale = (yarn === undefined ? 1 : yarnSoftmaxScale(yarn)) / Math.sqrt(spec.qkNopeHeadDim + R);
    const w = weights.kvB;
    this.kvB = new Float32Array(w.rows * w.cols);
    for (let r = 0; r < w.rows; r++)
      for (let c = 0; c < w.cols; c++) this.kvB[r * w.cols + c] = weightAt(w, r, c);
  }

  /** Reads the layer's tensors by `names`; a shape that disagrees with `spec` is refused naming the tensor. */
  static load(
    w: WeightSource,
    names: MlaNames,
    spec: MlaSpec,
    hiddenSize: number,
    normEps: number,
    indexer?: DsaIndexer,
    sharedTopK?: SharedTopK,
  ): MlaAttention {
    const weights: MlaWeights = bindParameters(w, mlaParameters(names, spec, hiddenSize));
    return new MlaAttention(spec, weights, names, hiddenSize, normEps, indexer, sharedTopK);
  }

  /** The parameters this layer was read from (mlaParameters), by role. */
  parameters(): ReturnType<typeof mlaParameters> {
    return mlaParameters(this.names, this.spec, this.hiddenSize);
  }

  states(switches: ReadonlyMap<string, string>): LayerStates {
    return mlaStates(this.spec, this.indexer?.spec, switches);
  }

  forward(h: Float32Array, ctx: ForwardContext, storage: LayerStorage): Float32Array {
    const { batch, pool } = ctx;
    const {
      numHeads: nh,
      qLoraRank,
      kvLoraRank: C,
      qkNopeHeadDim: dn,
      qkRopeHeadDim: dr,
      vHeadDim: dv,
    } = this.spec;
    const w = this.weights;
    const T = batch.tokens.length;
    const qk = dn + dr;
    const q = new Float32Array(T * nh * qk);
    const kv = new Float32Array(T * (C + dr));
    // The query's low-rank latent, which DSA's indexer reads too.
    let qLatent: Float32Array | undefined;
    if (qLoraRank > 0) {
      qLatent = new Float32Array(T * qLoraRank);
      pool.matmulMany(h, T, [w.qA as Weight, w.kvA], [qLatent, kv]);
      rmsNorm(qLatent, T, qLoraRank, w.qANorm as Float32Array, this.normEps);
      pool.matmul(qLatent, T, w.qB as Weight, q);
    } else {
      pool.matmulMany(h, T, [w.q as Weight, w.kvA], [q, kv]);
    }
    // Cache rows [normalized latent, rotated shared key].
    const latent = new Float32Array(T * C);
    for (let t = 0; t < T; t++) latent.set(kv.subarray(t * (C + dr), t * (C + dr) + C), t * C);
    rmsNorm(latent, T, C, w.kvANorm, this.normEps);
    const rope = this.rope;
    const switched = ctx.switches.get("mla_rope") ?? mlaRopeSwitch(this.spec).default;
    const rotate = (x: Float32Array, offset: number, pos: number) =>
      switched === "half-split"
        ? rope?.apply(x, offset, 1, dr, pos)
        : rope?.rotateAdjacentPairs(x, offset, dr, pos);
    for (let t = 0; t < T; t++) {
      kv.set(latent.subarray(t * C, (t + 1) * C), t * (C + dr));
      if (rope === undefined) continue;
      const pos = batch.positions[t] as number;
      for (let hd = 0; hd < nh; hd++) rotate(q, t * nh * qk + hd * qk + dn, pos);
      rotate(kv, t * (C + dr) + C, pos);
    }
    const out = new Float32Array(T * nh * dv);
    if (perHeadCache(ctx.switches, this.indexer?.spec)) {
      const cache = storage.kv("kv");
      const tableOf = tablesOf(batch, cache.group);
      this.writePerHead(latent, kv, T, cache, tableOf, batch.positions, pool);
      for (const run of batch.sequences)
        this.perHead(run, q, out, cache, tableOf(run.first), batch.positions);
    } else this.latentAttention(h, qLatent, kv, q, out, T, storage, ctx);
    const o = new Float32Array(T * this.hiddenSize);
    pool.matmul(out, T, w.o, o);
    return o;
  }

  /** Writes the latent rows (and indexer keys) and attends over them in the mla_form switch's form. */
  private latentAttention(
    h: Float32Array,
    qLatent: Float32Array | undefined,
    kv: Float32Array,
    q: Float32Array,
    out: Float32Array,
    T: number,
    storage: LayerStorage,
    ctx: ForwardContext,
  ): void {
    const { batch, pool } = ctx;
    const cache = storage.rows("latent");
    const tableOf = tablesOf(batch, cache.group);
    for (let t = 0; t < T; t++) {
      cache.write(cache.placement.slot(tableOf(t), batch.positions[t] as number), kv, t * cache.width);
    }
    let selected: Int32Array[] | undefined;
    if (this.indexer !== undefined) {
      const keys = storage.rows("indexerKeys");
      const keysTableOf = tablesOf(batch, keys.group);
      const indexKeys = this.indexer.keys(h, T, batch.positions, pool, ctx.switches);
      for (let t = 0; t < T; t++) {
        const slot = keys.placement.slot(keysTableOf(t), batch.positions[t] as number);
        keys.write(slot, indexKeys, t * keys.width);
      }
      selected = this.indexer.select(h, qLatent, T, batch.positions, keys, keysTableOf, pool, ctx.switches);
      this.sharedTopK?.publish(selected, T);
    } else if (this.sharedTopK !== undefined) selected = this.sharedTopK.reuse(T);

    const form = ctx.switches.get("mla_form") ?? "absorbed";
    for (const run of batch.sequences) {
      const expand = form === "expanded" || (form === "prefill-expanded" && run.count > 1);
      if (expand) this.expanded(run, q, out, cache, tableOf(run.first), batch.positions, pool, selected);
      else this.absorbed(run, q, out, cache, tableOf(run.first), batch.positions, selected);
    }
  }

  /**
   * Each token's per-head keys [kv_b_proj's key rows x latent, the shared rotated key] and values
   * (its value rows x latent) into the cache: the rows the expanded form computes, bit for bit.
   */
  private writePerHead(
    latent: Float32Array,
    kv: Float32Array,
    T: number,
    cache: PagedKv,
    tableOf: (t: number) => readonly number[],
    positions: ArrayLike<number>,
    pool: ForwardContext["pool"],
  ): void {
    const { numHeads: nh, kvLoraRank: C, qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = this.spec;
    const rowsPerHead = dn + dv;
    const up = new Float32Array(T * nh * rowsPerHead);
    pool.matmul(latent, T, this.weights.kvB, up);
    const k = new Float32Array(nh * (dn + dr));
    const v = new Float32Array(nh * dv);
    for (let t = 0; t < T; t++) {
      for (let hd = 0; hd < nh; hd++) {
        const row = (t * nh + hd) * rowsPerHead;
        k.set(up.subarray(row, row + dn), hd * (dn + dr));
        k.set(kv.subarray(t * (C + dr) + C, (t + 1) * (C + dr)), hd * (dn + dr) + dn);
        v.set(up.subarray(row + dn, row + rowsPerHead), hd * dv);
      }
      cache.write(cache.placement.slot(tableOf(t), positions[t] as number), k, 0, v, 0);
    }
  }

  /** Ordinary multi-head attention over the per-head keys and values in the cache. */
  private perHead(
    run: SequenceRun,
    q: Float32Array,
    out: Float32Array,
    cache: PagedKv,
    table: readonly number[],
    positions: ArrayLike<number>,
  ): void {
    const { numHeads: nh, qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = this.spec;
    const qk = dn + dr;
    for (let t = run.first; t < run.first + run.count; t++) {
      const S = (positions[t] as number) + 1;
      const slots = Int32Array.from({ length: S }, (_, p) => cache.placement.slot(table, p));
      const keyAt = new Int32Array(S);
      const ropeAt = new Int32Array(S);
      const valueAt = new Int32Array(S);
      const scores = new Float64Array(S);
      for (let hd = 0; hd < nh; hd++) {
        for (let p = 0; p < S; p++) {
          keyAt[p] = (slots[p] as number) * cache.keyStride + hd * qk;
          ropeAt[p] = (keyAt[p] as number) + dn;
          valueAt[p] = (slots[p] as number) * cache.valueStride + hd * dv;
        }
        const heads = {
          keys: cache.keys,
          keyAt,
          ropeKeys: cache.keys,
          ropeAt,
          values: cache.values,
          valueAt,
        };
        this.attendHead(q, t * nh * qk + hd * qk, heads, scores, out, t * nh * dv + hd * dv);
      }
    }
  }

  /**
   * One query head's softmax attention over keys and values at per-position offsets (the nope part
   * of its key, the rotary part, its value), writing vHeadDim outputs at `outOffset`.
   */
  private attendHead(
    q: Float32Array,
    qOffset: number,
    rows: HeadRows,
    scores: Float64Array,
    out: Float32Array,
    outOffset: number,
  ): void {
    const { qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = this.spec;
    const { keys, keyAt, ropeKeys, ropeAt, values, valueAt } = rows;
    const S = keyAt.length;
    let max = Number.NEGATIVE_INFINITY;
    for (let s = 0; s < S; s++) {
      const k = keyAt[s] as number;
      const r0 = ropeAt[s] as number;
      let dot = 0;
      for (let d = 0; d < dn; d++) dot += (q[qOffset + d] as number) * (keys[k + d] as number);
      for (let r = 0; r < dr; r++) dot += (q[qOffset + dn + r] as number) * (ropeKeys[r0 + r] as number);
      scores[s] = dot * this.scale;
      max = Math.max(max, dot * this.scale);
    }
    const sum = softmaxInPlace(scores, max);
    for (let j = 0; j < dv; j++) {
      let v = 0;
      for (let s = 0; s < S; s++)
        v += ((scores[s] as number) / sum) * (values[(valueAt[s] as number) + j] as number);
      out[outOffset + j] = v;
    }
  }

  /** Positions token t attends: the indexer's choice, or every position up to its own. */
  private visible(t: number, pos: number, selected?: readonly Int32Array[]): ArrayLike<number> {
    const chosen = selected?.[t];
    if (chosen !== undefined) return chosen;
    return Int32Array.from({ length: pos + 1 }, (_, p) => p);
  }

  /** Attention over the cached latents: kv_b_proj's key rows folded into q, its value rows after. */
  private absorbed(
    run: SequenceRun,
    q: Float32Array,
    out: Float32Array,
    cache: PagedRows,
    table: readonly number[],
    positions: ArrayLike<number>,
    selected?: readonly Int32Array[],
  ): void {
    const { numHeads: nh, kvLoraRank: C, qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = this.spec;
    const qk = dn + dr;
    const rowsPerHead = dn + dv;
    const stride = C + dr;
    const keys = cache.rows;
    const folded = new Float64Array(C);
    const mixed = new Float64Array(C);
    for (let t = run.first; t < run.first + run.count; t++) {
      const pos = positions[t] as number;
      const seen = this.visible(t, pos, selected);
      const slots = Int32Array.from(seen, (p) => cache.placement.slot(table, p) * stride);
      const scores = new Float64Array(slots.length);
      for (let hd = 0; hd < nh; hd++) {
        const qOff = t * nh * qk + hd * qk;
        folded.fill(0);
        for (let d = 0; d < dn; d++) {
          const x = q[qOff + d] as number;
          const row = (hd * rowsPerHead + d) * C;
          for (let c = 0; c < C; c++) folded[c] = (folded[c] as number) + x * (this.kvB[row + c] as number);
        }
        let max = Number.NEGATIVE_INFINITY;
        for (let s = 0; s < slots.length; s++) {
          const base = slots[s] as number;
          let dot = 0;
          for (let c = 0; c < C; c++) dot += (folded[c] as number) * (keys[base + c] as number);
          for (let r = 0; r < dr; r++) dot += (q[qOff + dn + r] as number) * (keys[base + C + r] as number);
          scores[s] = dot * this.scale;
          max = Math.max(max, dot * this.scale);
        }
        const sum = softmaxInPlace(scores, max);
        mixed.fill(0);
        for (let s = 0; s < slots.length; s++) {
          const p = (scores[s] as number) / sum;
          const base = slots[s] as number;
          for (let c = 0; c < C; c++) mixed[c] = (mixed[c] as number) + p * (keys[base + c] as number);
        }
        for (let j = 0; j < dv; j++) {
          const row = (hd * rowsPerHead + dn + j) * C;
          let v = 0;
          for (let c = 0; c < C; c++) v += (this.kvB[row + c] as number) * (mixed[c] as number);
          out[t * nh * dv + hd * dv + j] = v;
        }
      }
    }
  }

  /** Attention over per-head keys and values expanded from the sequence's cached latents. */
  private expanded(
    run: SequenceRun,
    q: Float32Array,
    out: Float32Array,
    cache: PagedRows,
    table: readonly number[],
    positions: ArrayLike<number>,
    pool: ForwardContext["pool"],
    selected?: readonly Int32Array[],
  ): void {
    const { numHeads: nh, kvLoraRank: C, qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = this.spec;
    const qk = dn + dr;
    const rowsPerHead = dn + dv;
    const stride = C + dr;
    const keys = cache.rows;
    // Every position up to the run's last, expanded once (each row's bits do not depend on the count).
    const last = positions[run.first + run.count - 1] as number;
    const S = last + 1;
    const latents = new Float32Array(S * C);
    for (let p = 0; p < S; p++) {
      const base = cache.placement.slot(table, p) * stride;
      latents.set(keys.subarray(base, base + C), p * C);
    }
    const expandedKv = new Float32Array(S * nh * rowsPerHead);
    pool.matmul(latents, S, this.weights.kvB, expandedKv);
    for (let t = run.first; t < run.first + run.count; t++) {
      const seen = this.visible(t, positions[t] as number, selected);
      const n = seen.length;
      const scores = new Float64Array(n);
      const ropeAt = Int32Array.from(seen, (p) => cache.placement.slot(table, p) * stride + C);
      const keyAt = new Int32Array(n);
      const valueAt = new Int32Array(n);
      for (let hd = 0; hd < nh; hd++) {
        for (let s = 0; s < n; s++) {
          keyAt[s] = ((seen[s] as number) * nh + hd) * rowsPerHead;
          valueAt[s] = (keyAt[s] as number) + dn;
        }
        const heads = { keys: expandedKv, keyAt, ropeKeys: keys, ropeAt, values: expandedKv, valueAt };
        this.attendHead(q, t * nh * qk + hd * qk, heads, scores, out, t * nh * dv + hd * dv);
      }
    }
  }
}

/** Where one head's key parts and value sit for each attended position (offsets into the arrays). */
interface HeadRows {
  readonly keys: Float32Array;
  readonly keyAt: Int32Array;
  readonly ropeKeys: Float32Array;
  readonly ropeAt: Int32Array;
  readonly values: Float32Array;
  readonly valueAt: Int32Array;
}

/** exp(x - max) in place; returns the sum. */
function softmaxInPlace(scores: Float64Array, max: number): number {
  let sum = 0;
  for (let s = 0; s < scores.length; s++) {
    const e = Math.exp((scores[s] as number) - max);
    scores[s] = e;
    sum += e;
  }
  return sum;
}

/** Each token's block table in the cache group `group`. */
function tablesOf(batch: ForwardContext["batch"], group: number): (t: number) => readonly number[] {
  return (t) => (batch.blockTables[t] as readonly (readonly number[])[])[group] as readonly number[];
}
