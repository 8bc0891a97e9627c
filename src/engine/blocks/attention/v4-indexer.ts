import type { PagedKv, PagedRows } from "../../cache/storage.js";
import type { Rope } from "../../kernels/rope.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ForwardContext } from "../../model/model.js";
import { stepArray } from "../../model/step-scratch.js";
import type { Weight } from "../../tensor/weight.js";
import { bindParameters, matrixParam } from "../parameters.js";
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
 * those whose window has closed.
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
    const scale = 1 / Math.sqrt(d);
    const headScale = 1 / Math.sqrt(nh);
    const chosen: Int32Array[] = [];
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      for (let hd = 0; hd < nh; hd++)
        this.rope.rotateAdjacentPairs(q, (t * nh + hd) * d + d - ropeDim, ropeDim, pos);
      const rows = visibleRows(pos, ratio);
      if (rows <= topK) {
        chosen.push(Int32Array.from({ length: rows }, (_, s) => s));
        continue;
      }
      const table = tableOf(batch, t, keys.group);
      const scores = new Float64Array(rows);
      for (let s = 0; s < rows; s++) {
        const at = keys.placement.slot(table, s) * d;
        let total = 0;
        for (let hd = 0; hd < nh; hd++) {
          let dot = 0;
          for (let i = 0; i < d; i++)
            dot += (q[(t * nh + hd) * d + i] as number) * (keys.rows[at + i] as number);
          total += (w[t * nh + hd] as number) * headScale * Math.max(0, dot) * scale;
        }
        scores[s] = total;
      }
      const order = Array.from({ length: rows }, (_, s) => s).sort(
        (a, b) => (scores[b] as number) - (scores[a] as number) || a - b,
      );
      chosen.push(Int32Array.from(order.slice(0, topK)).sort());
    }
    return chosen;
  }
}
