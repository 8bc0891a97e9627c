import { BringupError } from "../../../common/errors.js";
import { decodeTable, encodeMinifloat, FP8_E4M3FN, maxFinite } from "../../../formats/index.js";
import type { PagedRows } from "../../cache/storage.js";
import type { IndexerQuery } from "../../kernels/indexer-scores/indexer-job.js";
import type { MatmulPool } from "../../kernels/pool.js";
import { Rope, type YarnScaling } from "../../kernels/rope.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ModelSwitch } from "../../model/model-switch.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, f32Param, matrixParam } from "../parameters.js";

/**
 * The indexer of DeepSeek sparse attention (deepseek-ai/DeepSeek-V3.2-Exp `inference/model.py`,
 * HF `GlmMoeDsaIndexer`): its own small heads score every earlier token and MLA attends only to
 * the top-k.
 */
export interface DsaSpec {
  readonly numHeads: number;
  /** Features of each indexer head and of the one indexer key per token (a power of two). */
  readonly headDim: number;
  /** Leading features of each head and key that are rotated (MLA's qk_rope_head_dim). */
  readonly ropeDim: number;
  readonly ropeTheta: number;
  /** YaRN scaling of those features' frequencies, as MLA's (DeepSeek-V3.2 shares one freqs_cis). */
  readonly ropeScaling?: YarnScaling;
  /**
   * RoPE pairing of those features: adjacent pairs (2i, 2i+1) when true, as GLM-5's
   * `indexer_rope_interleave: true` asks (vLLM and SGLang: is_neox_style = not it); else i with
   * i + ropeDim/2, as DeepSeek-V3.2-Exp's indexer (`apply_rotary_emb(..., interleaved=False)`).
   */
  readonly ropeInterleave: boolean;
  /** The FP8 mode's scale per 128 values: amax / 448, or that rounded up to a power of two ("ue8m0"). */
  readonly fp8Scale: Fp8ScaleFormat;
  readonly topK: number;
}

/**
 * How an FP8 block scale is chosen: "amax" is amax / 448 (DeepSeek's act_quant without a
 * scale_fmt), "ue8m0" is 2^ceil(log2(amax / 448)) (act_quant with scale_fmt "ue8m0", as
 * DeepSeek-V3.2's config.json gives it in quantization_config).
 */
export type Fp8ScaleFormat = "amax" | "ue8m0";

/** Checkpoint names under `<prefix>.self_attn.indexer` (bases without `.weight`). */
export interface DsaNames {
  readonly qB: string;
  readonly k: string;
  readonly kNorm: string;
  readonly weights: string;
}

export function dsaNames(prefix: string): DsaNames {
  const p = `${prefix}.self_attn.indexer`;
  return { qB: `${p}.wq_b`, k: `${p}.wk`, kNorm: `${p}.k_norm`, weights: `${p}.weights_proj` };
}

/**
 * The parameters of one DSA indexer under `names`: its query up-projection from MLA's query latent
 * (`qLoraRank`), its key projection with a LayerNorm (scale one, shift zero) and its head weights.
 */
export function dsaParameters(names: DsaNames, spec: DsaSpec, hidden: number, qLoraRank: number) {
  const { numHeads: n, headDim: d } = spec;
  return {
    qB: matrixParam(names.qB, n * d, qLoraRank),
    k: matrixParam(names.k, d, hidden),
    kNorm: f32Param(`${names.kNorm}.weight`, [d], "ones"),
    kNormBias: f32Param(`${names.kNorm}.bias`, [d], "zeros"),
    weights: matrixParam(names.weights, n, hidden),
  };
}

/**
 * - dsa_indexer: score in f32 from the exact indexer queries and keys ("exact"), or as the
 *   reference does, after a Hadamard transform and FP8 E4M3 quantization with one scale per 128
 *   values ("fp8"), which can change which tokens are chosen near the k-th score;
 * - dsa_attention: attend only to the top-k ("sparse"), or to every earlier token ("dense", as
 *   vllm-gaudi runs these layers, its indexer kernels being CUDA-only). The indexer keys are cached
 *   either way.
 */
export const DSA_SWITCHES: readonly ModelSwitch[] = [
  {
    name: "dsa_indexer",
    values: ["exact", "fp8"],
    default: "exact",
    description:
      "DSA indexer scores from exact f32 queries and keys, or Hadamard-rotated FP8 ones as the reference",
  },
  {
    name: "dsa_attention",
    values: ["sparse", "dense"],
    default: "sparse",
    description:
      "latent attention over the indexer's top-k tokens, or over every earlier token (the dense fallback)",
  },
];

/** FP8 scales cover this many values, as the reference's act_quant blocks. */
const QUANT_BLOCK = 128;
const LAYER_NORM_EPS = 1e-6;
const E4M3_MAX = maxFinite(FP8_E4M3FN);
const E4M3_VALUES = decodeTable(FP8_E4M3FN);

/**
 * The indexer of one layer. Its key per token (LayerNorm(wk·h), RoPE on the leading ropeDim
 * features, paired as spec.ropeInterleave says) is the MLA layer's second paged state
 * (`indexer-keys`), beside its latent. A query's score for an earlier token s is
 * Σ_h w_h · ReLU(q_h · k_s), w = weights_proj(h) / sqrt(heads · headDim); the top-k scores up to
 * the query's own position win, ties to the earlier token.
 */
export class DsaIndexer {
  private readonly rope: Rope;

  constructor(
    readonly spec: DsaSpec,
    readonly qB: Weight,
    readonly k: Weight,
    readonly kNormWeight: Float32Array,
    readonly kNormBias: Float32Array,
    readonly weightsProj: Weight,
    readonly names: DsaNames,
  ) {
    const { headDim: d, ropeDim, topK } = spec;
    const fail = (message: string): never => {
      throw new BringupError("MODEL_CONFIG_INVALID", `DSA indexer: ${message}`, { subject: "indexer" });
    };
    if (!Number.isInteger(Math.log2(d)))
      fail(`index_head_dim ${d} must be a power of two (the Hadamard transform).`);
    if (ropeDim % 2 !== 0 || ropeDim > d)
      fail(`the rotary dim ${ropeDim} must be even and at most index_head_dim ${d}.`);
    if (!Number.isInteger(topK) || topK < 1) fail(`index_topk ${topK} must be a whole number of at least 1.`);
    this.rope = new Rope(d, ropeDim / d, spec.ropeTheta, spec.ropeScaling);
  }

  static load(
    w: WeightSource,
    names: DsaNames,
    spec: DsaSpec,
    hiddenSize: number,
    qLoraRank: number,
  ): DsaIndexer {
    if (qLoraRank <= 0) {
      throw new BringupError(
        "MODEL_CONFIG_INVALID",
        "DSA indexer: its queries come from MLA's query latent; set q_lora_rank above 0.",
        { subject: "q_lora_rank" },
      );
    }
    const p = bindParameters(w, dsaParameters(names, spec, hiddenSize, qLoraRank));
    return new DsaIndexer(spec, p.qB, p.k, p.kNorm, p.kNormBias, p.weights, names);
  }

  /** The parameters this indexer was read from (dsaParameters), by role. */
  parameters(): ReturnType<typeof dsaParameters> {
    return dsaParameters(this.names, this.spec, this.k.cols, this.qB.cols);
  }

  /** Rotates the leading ropeDim features of `numHeads` heads at x[offset...] for a token at `pos`. */
  private rotate(x: Float32Array, offset: number, numHeads: number, pos: number): void {
    const { headDim: d, ropeDim, ropeInterleave } = this.spec;
    if (!ropeInterleave) this.rope.apply(x, offset, numHeads, d, pos);
    else for (let h = 0; h < numHeads; h++) this.rope.rotateAdjacentPairs(x, offset + h * d, ropeDim, pos);
  }

  /** The indexer key of each of T tokens [T, headDim], as the cache keeps it under `switches`. */
  keys(
    h: Float32Array,
    T: number,
    positions: ArrayLike<number>,
    pool: MatmulPool,
    switches: ReadonlyMap<string, string>,
  ): Float32Array {
    const d = this.spec.headDim;
    const k = new Float32Array(T * d);
    pool.matmul(h, T, this.k, k);
    for (let t = 0; t < T; t++) {
      layerNorm(k, t * d, d, this.kNormWeight, this.kNormBias);
      this.rotate(k, t * d, 1, positions[t] as number);
    }
    if (switches.get("dsa_indexer") === "fp8") hadamardFp8(k, T, d, this.spec.fp8Scale);
    return k;
  }

  /**
   * For each token, the positions MLA attends in ascending order: all up to its own while they
   * number at most top-k, else the indexer's top-k; undefined for every token under dense attention.
   */
  select(
    h: Float32Array,
    qLatent: Float32Array | undefined,
    T: number,
    positions: ArrayLike<number>,
    cache: PagedRows,
    tableOf: (t: number) => readonly number[],
    pool: MatmulPool,
    switches: ReadonlyMap<string, string>,
  ): Int32Array[] | undefined {
    if (switches.get("dsa_attention") === "dense") return undefined;
    const { numHeads: n, headDim: d, topK } = this.spec;
    const q = new Float32Array(T * n * d);
    pool.matmul(qLatent as Float32Array, T, this.qB, q);
    for (let t = 0; t < T; t++) this.rotate(q, t * n * d, n, positions[t] as number);
    if (switches.get("dsa_indexer") === "fp8") hadamardFp8(q, T * n, d, this.spec.fp8Scale);
    const w = new Float32Array(T * n);
    pool.matmul(h, T, this.weightsProj, w);
    const weightScale = 1 / Math.sqrt(n * d);
    const out: Int32Array[] = [];
    const values = cache.rows;
    const stride = cache.width;
    let bases = new Int32Array(0);
    let basesOf: readonly number[] | undefined;
    let last = 0;
    for (let t = 0; t < T; t++) last = Math.max(last, positions[t] as number);
    // Tokens that read the same block table (a sequence's) are scored in one dispatch.
    let queries: (IndexerQuery & { readonly t: number })[] = [];
    const score = () => {
      if (queries.length > 0) pool.indexerScores({ keys: values, offsets: bases, d, queries });
      for (const query of queries) out[query.t] = topKPositions(query.scores, topK);
      queries = [];
    };
    for (let t = 0; t < T; t++) {
      const pos = positions[t] as number;
      if (pos + 1 <= topK) {
        out[t] = Int32Array.from({ length: pos + 1 }, (_, p) => p);
        continue;
      }
      // Each cached key's offset, computed once per block table (a sequence's) up to the step's
      // last position; entries past the sequence's own blocks are never read.
      const table = tableOf(t);
      if (table !== basesOf) {
        score();
        const size = cache.placement.blockSize;
        bases = new Int32Array(Math.min(last + 1, table.length * size));
        // A block's positions sit in consecutive slots: one lookup per block.
        for (let p = 0; p < bases.length; p += size) {
          const first = cache.placement.slot(table, p) * stride;
          for (let j = 0; j < size && p + j < bases.length; j++) bases[p + j] = first + j * stride;
        }
        basesOf = table;
      }
      queries.push({
        t,
        q: q.subarray(t * n * d, (t + 1) * n * d),
        weights: Float64Array.from({ length: n }, (_, hd) => (w[t * n + hd] as number) * weightScale),
        count: pos + 1,
        scores: new Float64Array(pos + 1),
      });
    }
    score();
    return out;
  }
}

/** The k highest of `scores` (ties to the lower position), returned in ascending position order. */
export function topKPositions(scores: Float64Array, k: number): Int32Array {
  const n = scores.length;
  if (n <= k) return Int32Array.from({ length: n }, (_, s) => s);
  // A selection instead of a sort: a min-heap of the best k so far, its root the worst of them
  // (lowest score, then highest position). Positions arrive in ascending order, so a later one
  // equal to the root is not better and ties keep the lower position, as a stable sort would.
  const heap = Int32Array.from({ length: k }, (_, s) => s);
  const worse = (a: number, b: number) =>
    (scores[a] as number) < (scores[b] as number) ||
    ((scores[a] as number) === (scores[b] as number) && a > b);
  const siftDown = (from: number) => {
    let i = from;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= k) return;
      const r = l + 1;
      const c = r < k && worse(heap[r] as number, heap[l] as number) ? r : l;
      if (!worse(heap[c] as number, heap[i] as number)) return;
      const x = heap[i] as number;
      heap[i] = heap[c] as number;
      heap[c] = x;
      i = c;
    }
  };
  for (let i = (k >> 1) - 1; i >= 0; i--) siftDown(i);
  for (let s = k; s < n; s++) {
    if ((scores[s] as number) <= (scores[heap[0] as number] as number)) continue;
    heap[0] = s;
    siftDown(0);
  }
  return heap.sort();
}

function layerNorm(
  x: Float32Array,
  offset: number,
  n: number,
  weight: Float32Array,
  bias: Float32Array,
): void {
  let mean = 0;
  for (let i = 0; i < n; i++) mean += x[offset + i] as number;
  mean /= n;
  let variance = 0;
  for (let i = 0; i < n; i++) variance += ((x[offset + i] as number) - mean) ** 2;
  const inv = 1 / Math.sqrt(variance / n + LAYER_NORM_EPS);
  for (let i = 0; i < n; i++)
    x[offset + i] = ((x[offset + i] as number) - mean) * inv * (weight[i] as number) + (bias[i] as number);
}

/**
 * Each of `rows` vectors of `d` (a power of two) through the orthonormal Hadamard transform
 * (Sylvester order, scaled by d^-1/2, as the reference's rotate_activation), then through FP8
 * E4M3 with one scale per 128 values (as `scaleFormat` says): the values the reference's indexer
 * multiplies.
 */
export function hadamardFp8(x: Float32Array, rows: number, d: number, scaleFormat: Fp8ScaleFormat): void {
  const scale = 1 / Math.sqrt(d);
  const block = Math.min(QUANT_BLOCK, d);
  for (let r = 0; r < rows; r++) {
    const o = r * d;
    for (let len = 1; len < d; len *= 2) {
      for (let i = 0; i < d; i += 2 * len) {
        for (let j = i; j < i + len; j++) {
          const a = x[o + j] as number;
          const b = x[o + j + len] as number;
          x[o + j] = a + b;
          x[o + j + len] = a - b;
        }
      }
    }
    for (let i = 0; i < d; i++) x[o + i] = (x[o + i] as number) * scale;
    for (let b = 0; b < d; b += block) {
      let amax = 0;
      for (let i = b; i < b + block; i++) amax = Math.max(amax, Math.abs(x[o + i] as number));
      if (amax === 0) continue;
      const s = scaleFormat === "ue8m0" ? 2 ** Math.ceil(Math.log2(amax / E4M3_MAX)) : amax / E4M3_MAX;
      for (let i = b; i < b + block; i++) {
        const code = encodeMinifloat(FP8_E4M3FN, (x[o + i] as number) / s, { saturate: true });
        x[o + i] = (E4M3_VALUES[code] as number) * s;
      }
    }
  }
}
