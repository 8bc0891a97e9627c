import type { PagedKv, PagedRows } from "../../cache/storage.js";
import type { IndexerQuery } from "../../kernels/indexer-scores/indexer-job.js";
import type { Rope } from "../../kernels/rope.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext } from "../../model/model.js";
import { stepArray } from "../../model/step-scratch.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, matrixParam } from "../parameters.js";
import { topKPositions } from "./dsa-indexer.js";
import {
  Compressor,
  type CompressorNames,
  type CompressorSpec,
  compressorNames,
  tableOf,
  visibleRows,
} from "./v4-compressor.js";

/**
 * DeepSeek-V4's lightning indexer (HF `DeepseekV4Indexer`; paper eqs. 13-17), in compressed
 * sparse attention layers: its own overlapping compressor keeps one key of `headDim` per `ratio`
 * positions; a query's `numHeads` heads come from the attention's query latent (q_b_proj), each
 * rotated at the query's position; compressed row s scores sum_h w_h relu(q_h . k_s) / sqrt(headDim)
 * with w = weights_proj(h) / sqrt(numHeads), and the query attends to the `topK` best rows among
 * those whose window has closed. The scores are the pool's indexer kernel's (pool.indexerScores,
 * the DSA indexer's form: both scales folded into each head's weight, the dots in f64), so the
 * WebAssembly kernel and its plain reference give the same rows.
 */
export interface V4IndexerSpec {
  readonly numHeads: number;
  readonly headDim: number;
  readonly topK: number;
}

export interface V4IndexerNames {
  readonly compressor: CompressorNames;
  readonly qB: string;
  readonly weights: string;
}

/** HF's names under `<attention>.compressor.indexer`. */
export function v4IndexerNames(attention: string): V4IndexerNames {
  const p = `${attention}.compressor.indexer`;
  return { compressor: compressorNames(p), qB: `${p}.q_b_proj`, weights: `${p}.weights_proj` };
}

export function v4IndexerCompressor(spec: V4IndexerSpec, ratio: number, ropeDim: number): CompressorSpec {
  return { width: spec.headDim, ratio, overlap: true, ropeDim };
}

/** The indexer's own projections (its compressor's are compressorParameters). */
export function v4IndexerParameters(
  names: V4IndexerNames,
  spec: V4IndexerSpec,
  hidden: number,
  qLoraRank: number,
) {
  return {
    qB: matrixParam(names.qB, spec.numHeads * spec.headDim, qLoraRank),
    weights: matrixParam(names.weights, spec.numHeads, hidden),
  };
}

export class V4Indexer {
  constructor(
    readonly spec: V4IndexerSpec,
    readonly compressor: Compressor,
    private readonly qB: Weight,
    private readonly weightsProj: Weight,
    private readonly rope: Rope,
  ) {}

  static load(
    w: WeightSource,
    names: V4IndexerNames,
    spec: V4IndexerSpec,
    compressor: CompressorSpec,
    hidden: number,
    qLoraRank: number,
    rope: Rope,
    normEps: number,
  ): V4Indexer {
    const { qB, weights } = bindParameters(w, v4IndexerParameters(names, spec, hidden, qLoraRank));
    return new V4Indexer(
      spec,
      Compressor.load(w, names.compressor, compressor, hidden, rope, normEps),
      qB,
      weights,
      rope,
    );
  }

  /**
   * Keeps the step's indexer keys (`source`, `keys`) and returns each token's chosen compressed
   * rows, ascending: every visible row when there are at most topK, else the topK best scores
   * (a tie goes to the earlier row).
   */
  select(
    h: Float32Array,
    qLatent: Float32Array,
    ctx: ForwardContext,
    source: PagedKv,
    keys: PagedRows,
  ): Int32Array[] {
    const { batch, pool } = ctx;
    const T = batch.tokens.length;
    const { numHeads: nh, headDim: d, topK } = this.spec;
    const [c, z] = this.compressor.project(h, T, ctx);
    this.compressor.update(batch, c, z, source, keys);
    const q = stepArray(ctx, Float32Array, T * nh * d);
    const w = stepArray(ctx, Float32Array, T * nh);
    pool.matmul(qLatent, T, this.qB, q);
    pool.matmul(h, T, this.weightsProj, w);
    const ropeDim = this.compressor.spec.ropeDim;
    const ratio = this.compressor.spec.ratio;
    // Each head's weight carries both scales: w_h / sqrt(numHeads) / sqrt(headDim).
    const weightScale = 1 / Math.sqrt(nh) / Math.sqrt(d);
    const chosen: Int32Array[] = [];
    // Tokens that read the same block table (a sequence's) are scored in one dispatch over its
    // visible rows' offsets, computed once per table up to the step's most.
    let queries: (IndexerQuery & { readonly t: number })[] = [];
    let offsets = new Int32Array(0);
    let offsetsOf: readonly number[] | undefined;
    const score = () => {
      if (queries.length > 0) pool.indexerScores({ keys: keys.rows, offsets, d, queries });
      for (const query of queries) chosen[query.t] = topKPositions(query.scores, topK);
      queries = [];
    };
    let most = 0;
    for (let t = 0; t < T; t++) most = Math.max(most, visibleRows(batch.positions[t] as number, ratio));
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      for (let hd = 0; hd < nh; hd++)
        this.rope.rotateAdjacentPairs(q, (t * nh + hd) * d + d - ropeDim, ropeDim, pos);
      const rows = visibleRows(pos, ratio);
      if (rows <= topK) {
        chosen[t] = Int32Array.from({ length: rows }, (_, s) => s);
        continue;
      }
      const table = tableOf(batch, t, keys.group);
      if (table !== offsetsOf) {
        score();
        // Rows past the sequence's own blocks are never read.
        const held = Math.min(most, table.length * keys.placement.blockSize);
        offsets = Int32Array.from({ length: held }, (_, s) => keys.placement.slot(table, s) * d);
        offsetsOf = table;
      }
      queries.push({
        t,
        q: q.subarray(t * nh * d, (t + 1) * nh * d),
        weights: Float64Array.from({ length: nh }, (_, hd) => (w[t * nh + hd] as number) * weightScale),
        count: rows,
        scores: new Float64Array(rows),
      });
    }
    score();
    return chosen;
  }
}
