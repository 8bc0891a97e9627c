import type { LayerKvCache } from "../../cache/kv-cache.js";
import { weightAt } from "../../kernels/reference.js";
import { rmsNorm } from "../../kernels/rmsnorm.js";
import { Rope } from "../../kernels/rope.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type {
  ForwardContext,
  LayerState,
  LayerStorage,
  ModelSwitch,
  SequenceRun,
  TokenMixer,
} from "../../model/model.js";
import type { Weight } from "../../tensor/weight.js";
import type { DsaIndexer } from "./dsa-indexer.js";

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
  readonly ropeTheta: number;
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
 * Multi-head latent attention over a paged cache holding, per token, only the normalized latent
 * and the rotated shared key ([kvLoraRank + qkRopeHeadDim] as the "key" of one KV head); with a
 * DSA indexer (dsa-indexer.ts) its key sits in the "value" part and each query attends only to the
 * positions the indexer picks. RoPE rotates adjacent feature pairs, as DeepSeek's complex form does.
 */
export class MlaAttention implements TokenMixer {
  readonly state: LayerState;
  readonly outputTensors: readonly string[];
  /** kv_b_proj in f32, read by the absorbed form's per-head folds. */
  private readonly kvB: Float32Array;
  private readonly rope: Rope;
  readonly scale: number;

  constructor(
    readonly spec: MlaSpec,
    readonly weights: MlaWeights,
    readonly names: MlaNames,
    private readonly hiddenSize: number,
    private readonly normEps: number,
    readonly indexer?: DsaIndexer,
  ) {
    const { kvLoraRank: C, qkRopeHeadDim: R } = spec;
    this.state = {
      kind: "paged",
      attention: "full",
      numKvHeads: 1,
      headDim: C + R,
      vHeadDim: indexer?.spec.headDim ?? 0,
    };
    this.outputTensors = [`${names.o}.weight`];
    this.rope = new Rope(R, 1, spec.ropeTheta);
    this.scale = 1 / Math.sqrt(spec.qkNopeHeadDim + R);
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
  ): MlaAttention {
    const H = hiddenSize;
    const {
      numHeads: nh,
      qLoraRank,
      kvLoraRank: C,
      qkNopeHeadDim: dn,
      qkRopeHeadDim: dr,
      vHeadDim: dv,
    } = spec;
    const qOut = nh * (dn + dr);
    const q =
      qLoraRank > 0
        ? {
            qA: w.matrix(names.qA, qLoraRank, H),
            qANorm: w.vector(names.qANorm, qLoraRank),
            qB: w.matrix(names.qB, qOut, qLoraRank),
          }
        : { q: w.matrix(names.q, qOut, H) };
    const weights: MlaWeights = {
      ...q,
      kvA: w.matrix(names.kvA, C + dr, H),
      kvANorm: w.vector(names.kvANorm, C),
      kvB: w.matrix(names.kvB, nh * (dn + dv), C),
      o: w.matrix(names.o, H, nh * dv),
    };
    return new MlaAttention(spec, weights, names, hiddenSize, normEps, indexer);
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
    for (let t = 0; t < T; t++) {
      kv.set(latent.subarray(t * C, (t + 1) * C), t * (C + dr));
      const pos = batch.positions[t] as number;
      for (let hd = 0; hd < nh; hd++) rotateAdjacentPairs(this.rope, q, t * nh * qk + hd * qk + dn, dr, pos);
      rotateAdjacentPairs(this.rope, kv, t * (C + dr) + C, dr, pos);
    }
    const indexKeys = this.indexer?.keys(h, T, batch.positions, pool, ctx.switches) ?? new Float32Array(0);
    const ki = this.indexer?.spec.headDim ?? 0;
    const cache = storage.cache as LayerKvCache;
    const group = storage.group as number;
    const tableOf = (t: number) =>
      (batch.blockTables[t] as readonly (readonly number[])[])[group] as readonly number[];
    for (let t = 0; t < T; t++) {
      cache.write(cache.slot(tableOf(t), batch.positions[t] as number), kv, t * (C + dr), indexKeys, t * ki);
    }
    const selected = this.indexer?.select(h, qLatent, T, batch.positions, cache, tableOf, pool, ctx.switches);

    const form = ctx.switches.get("mla_form") ?? "absorbed";
    const out = new Float32Array(T * nh * dv);
    for (const run of batch.sequences) {
      const expand = form === "expanded" || (form === "prefill-expanded" && run.count > 1);
      if (expand) this.expanded(run, q, out, cache, tableOf(run.first), batch.positions, pool, selected);
      else this.absorbed(run, q, out, cache, tableOf(run.first), batch.positions, selected);
    }
    const o = new Float32Array(T * this.hiddenSize);
    pool.matmul(out, T, w.o, o);
    return o;
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
    cache: LayerKvCache,
    table: readonly number[],
    positions: ArrayLike<number>,
    selected?: readonly Int32Array[],
  ): void {
    const { numHeads: nh, kvLoraRank: C, qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = this.spec;
    const qk = dn + dr;
    const rowsPerHead = dn + dv;
    const stride = C + dr;
    const keys = cache.keys;
    const folded = new Float64Array(C);
    const mixed = new Float64Array(C);
    for (let t = run.first; t < run.first + run.count; t++) {
      const pos = positions[t] as number;
      const seen = this.visible(t, pos, selected);
      const slots = Int32Array.from(seen, (p) => cache.slot(table, p) * stride);
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
    cache: LayerKvCache,
    table: readonly number[],
    positions: ArrayLike<number>,
    pool: ForwardContext["pool"],
    selected?: readonly Int32Array[],
  ): void {
    const { numHeads: nh, kvLoraRank: C, qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = this.spec;
    const qk = dn + dr;
    const rowsPerHead = dn + dv;
    const stride = C + dr;
    const keys = cache.keys;
    // Every position up to the run's last, expanded once (each row's bits do not depend on the count).
    const last = positions[run.first + run.count - 1] as number;
    const S = last + 1;
    const latents = new Float32Array(S * C);
    for (let p = 0; p < S; p++) {
      const base = cache.slot(table, p) * stride;
      latents.set(keys.subarray(base, base + C), p * C);
    }
    const expandedKv = new Float32Array(S * nh * rowsPerHead);
    pool.matmul(latents, S, this.weights.kvB, expandedKv);
    for (let t = run.first; t < run.first + run.count; t++) {
      const pos = positions[t] as number;
      const seen = this.visible(t, pos, selected);
      const scores = new Float64Array(seen.length);
      for (let hd = 0; hd < nh; hd++) {
        const qOff = t * nh * qk + hd * qk;
        let max = Number.NEGATIVE_INFINITY;
        for (let s = 0; s < seen.length; s++) {
          const p = seen[s] as number;
          const kOff = (p * nh + hd) * rowsPerHead;
          const rope = cache.slot(table, p) * stride + C;
          let dot = 0;
          for (let d = 0; d < dn; d++) dot += (q[qOff + d] as number) * (expandedKv[kOff + d] as number);
          for (let r = 0; r < dr; r++) dot += (q[qOff + dn + r] as number) * (keys[rope + r] as number);
          scores[s] = dot * this.scale;
          max = Math.max(max, dot * this.scale);
        }
        const sum = softmaxInPlace(scores, max);
        for (let j = 0; j < dv; j++) {
          let v = 0;
          for (let s = 0; s < seen.length; s++) {
            const p = seen[s] as number;
            v += ((scores[s] as number) / sum) * (expandedKv[(p * nh + hd) * rowsPerHead + dn + j] as number);
          }
          out[t * nh * dv + hd * dv + j] = v;
        }
      }
    }
  }
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

/**
 * DeepSeek's RoPE on x[offset .. offset + dim): features 2i and 2i+1 rotate together at frequency
 * i. The engine's Rope rotates i with i + dim/2 at frequency i, so the pairs are gathered into that
 * order, rotated and put back (as HF's DeepSeek-V3 code does to load the same checkpoint).
 */
export function rotateAdjacentPairs(
  rope: Rope,
  x: Float32Array,
  offset: number,
  dim: number,
  pos: number,
): void {
  const half = dim / 2;
  const tmp = new Float32Array(dim);
  for (let i = 0; i < half; i++) {
    tmp[i] = x[offset + 2 * i] as number;
    tmp[i + half] = x[offset + 2 * i + 1] as number;
  }
  rope.apply(tmp, 0, 1, dim, pos);
  for (let i = 0; i < half; i++) {
    x[offset + 2 * i] = tmp[i] as number;
    x[offset + 2 * i + 1] = tmp[i + half] as number;
  }
}
