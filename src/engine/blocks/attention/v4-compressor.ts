import type { PagedKv, PagedRows } from "../../cache/storage.js";
import { rmsNorm } from "../../kernels/rmsnorm.js";
import type { Rope } from "../../kernels/rope.js";
import type { WeightSource } from "../../loader/weight-source.js";
import type { ForwardBatch, ForwardContext } from "../../model/model.js";
import { stepArray } from "../../model/step-scratch.js";
import { type Bound, bindParameters, f32Param, matrixParam } from "../parameters.js";

/**
 * DeepSeek-V4's compressor (HF transformers `models/deepseek_v4`, `DeepseekV4CSACompressor` and
 * `DeepseekV4HCACompressor`; the paper's eqs. 9-12 and 20-23): every `ratio` positions of a
 * sequence are pooled into one compressed row of `width` features. Each position contributes a
 * value C = h W_kv and gate logits Z = h W_gate; row w is, feature by feature, the softmax over
 * its slots of (Z + position_bias) weighting C, then RMS-normalized and rotated (its trailing
 * `ropeDim` features, adjacent pairs) at position w * ratio.
 *
 * `overlap` (compressed sparse attention and its indexer): each position projects two series,
 * Ca (first `width` features) and Cb (last `width`); row w pools window w-1's Ca with window w's
 * Cb over 2 x ratio slots, so rows overlap by one window; row 0's Ca half is empty (weight 0).
 * Without overlap (heavily compressed attention) row w pools window w alone.
 */
export interface CompressorSpec {
  readonly width: number;
  readonly ratio: number;
  readonly overlap: boolean;
  /** Trailing features of a row that are rotated. */
  readonly ropeDim: number;
}

/** Checkpoint names (bases without `.weight` for the matrices) of one compressor. */
export interface CompressorNames {
  readonly kv: string;
  readonly gate: string;
  readonly positionBias: string;
  readonly norm: string;
}

/** HF's names under `base` (`<layer>.self_attn.compressor`, or its `.indexer`). */
export function compressorNames(base: string): CompressorNames {
  return {
    kv: `${base}.kv_proj`,
    gate: `${base}.gate_proj`,
    positionBias: `${base}.position_bias`,
    norm: `${base}.kv_norm.weight`,
  };
}

/** Features each position projects: both series with overlap, one without. */
export function seriesWidth(spec: CompressorSpec): number {
  return spec.overlap ? 2 * spec.width : spec.width;
}

/** The compressor's parameters at hidden size `hidden`: what loading reads and a tiny model draws. */
export function compressorParameters(names: CompressorNames, spec: CompressorSpec, hidden: number) {
  const out = seriesWidth(spec);
  return {
    kv: matrixParam(names.kv, out, hidden),
    gate: matrixParam(names.gate, out, hidden),
    positionBias: f32Param(names.positionBias, [spec.ratio, out], "fan-in"),
    norm: f32Param(names.norm, [spec.width], "ones"),
  };
}

/** kv and gate projections, position_bias [ratio, series width], kv_norm's weight. */
export type CompressorWeights = Bound<ReturnType<typeof compressorParameters>>;

/**
 * One compressor over a layer's paged states: `source` keeps each position's projections (keys:
 * C, values: Z) as a ring the window's length, `rows` the compressed rows.
 */
export class Compressor {
  constructor(
    readonly spec: CompressorSpec,
    readonly weights: CompressorWeights,
    private readonly rope: Rope,
    private readonly normEps: number,
  ) {}

  static load(
    w: WeightSource,
    names: CompressorNames,
    spec: CompressorSpec,
    hidden: number,
    rope: Rope,
    normEps: number,
  ): Compressor {
    return new Compressor(spec, bindParameters(w, compressorParameters(names, spec, hidden)), rope, normEps);
  }

  /** The projections of h [T, hidden] this compressor keeps per position: [C, Z], each [T, series]. */
  project(
    h: Float32Array,
    T: number,
    ctx: Pick<ForwardContext, "pool" | "scratch">,
  ): [Float32Array, Float32Array] {
    const n = T * seriesWidth(this.spec);
    const c = stepArray(ctx, Float32Array, n);
    const z = stepArray(ctx, Float32Array, n);
    ctx.pool.matmulMany(h, T, [this.weights.kv, this.weights.gate], [c, z]);
    return [c, z];
  }

  /**
   * Writes the step's projections into `source`, then every row whose window closes in this step
   * (a position p with (p + 1) mod ratio = 0) into `rows`. Rows read only `source`, so a row is
   * the same whichever step its positions ran in.
   */
  update(batch: ForwardBatch, c: Float32Array, z: Float32Array, source: PagedKv, rows: PagedRows): void {
    const T = batch.tokens.length;
    const sw = seriesWidth(this.spec);
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      source.write(source.placement.slot(tableOf(batch, t, source.group), pos), c, t * sw, z, t * sw);
    }
    const row = new Float32Array(this.spec.width);
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      if ((pos + 1) % this.spec.ratio !== 0) continue;
      const w = (pos + 1) / this.spec.ratio - 1;
      this.pool(w, source, tableOf(batch, t, source.group), row);
      rows.write(rows.placement.slot(tableOf(batch, t, rows.group), w), row, 0);
    }
  }

  /** Row `w` from the projections in `source` (block table `table`) into `out` [width]. */
  private pool(w: number, source: PagedKv, table: readonly number[], out: Float32Array): void {
    const { width, ratio, overlap, ropeDim } = this.spec;
    const sw = seriesWidth(this.spec);
    const bias = this.weights.positionBias;
    // Slots as (position, feature offset in the series, bias row): Ca of window w-1, Cb of window w.
    const slots: [number, number, number][] = [];
    if (overlap && w > 0) for (let j = 0; j < ratio; j++) slots.push([(w - 1) * ratio + j, 0, j]);
    for (let j = 0; j < ratio; j++) slots.push([w * ratio + j, overlap ? width : 0, j]);
    const n = slots.length;
    // Each slot's value offset in `source` and its bias offset, flat, so the loop per feature reads
    // plain arrays (the same operations in the same order as per slot, so the same bits).
    const at = new Int32Array(n);
    const biasAt = new Int32Array(n);
    for (let s = 0; s < n; s++) {
      const [pos, half, j] = slots[s] as [number, number, number];
      at[s] = source.placement.slot(table, pos) * sw + half;
      biasAt[s] = j * sw + half;
    }
    const values = source.values;
    const keys = source.keys;
    const logits = new Float64Array(n);
    for (let f = 0; f < width; f++) {
      let max = Number.NEGATIVE_INFINITY;
      for (let s = 0; s < n; s++) {
        const g = (values[(at[s] as number) + f] as number) + (bias[(biasAt[s] as number) + f] as number);
        logits[s] = g;
        if (g > max) max = g;
      }
      let sum = 0;
      for (let s = 0; s < n; s++) {
        const e = Math.exp((logits[s] as number) - max);
        logits[s] = e;
        sum += e;
      }
      let acc = 0;
      for (let s = 0; s < n; s++)
        acc += ((logits[s] as number) / sum) * (keys[(at[s] as number) + f] as number);
      out[f] = acc;
    }
    rmsNorm(out, 1, width, this.weights.norm, this.normEps);
    this.rope.rotateAdjacentPairs(out, width - ropeDim, ropeDim, w * ratio);
  }
}

/** Token `t`'s block table in cache group `group`. */
export function tableOf(batch: ForwardBatch, t: number, group: number): readonly number[] {
  return (batch.blockTables[t] as readonly (readonly number[])[])[group] as readonly number[];
}

/** Rows a query at `pos` may read: those whose window has closed by it, floor((pos + 1) / ratio). */
export function visibleRows(pos: number, ratio: number): number {
  return Math.floor((pos + 1) / ratio);
}
