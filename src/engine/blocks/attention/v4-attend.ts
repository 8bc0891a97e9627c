import type { PagedKv, PagedRows } from "../../cache/storage.js";
import type { MatmulPool } from "../../kernels/pool.js";
import type { ForwardBatch } from "../../model/model.js";
import { pagedTables } from "./paged-tables.js";
import { tableOf, visibleRows } from "./v4-compressor.js";

/**
 * One step of DeepSeek-V4's attention proper, after the queries are rotated: each token's heads
 * over its window's keys (oldest first), then the compressed rows it reads (ascending), with each
 * head's sink in the softmax; the keys are also the values (K = V, one shared head).
 */
export interface V4Attend {
  readonly batch: ForwardBatch;
  /** [T, numHeads, headDim] queries in, outputs out. */
  readonly q: Float32Array;
  readonly out: Float32Array;
  readonly numHeads: number;
  readonly headDim: number;
  readonly sinks: Float32Array;
  /** The window's keys as a ring, or every position's (v4_attention=dense). */
  readonly keys: PagedKv;
  /** The layer's compressed rows (csa, hca), absent in sliding and dense layers. */
  readonly rows?: PagedRows;
  /** Per token, the rows it reads, ascending (the indexer's choice); absent: every visible row. */
  readonly picked?: readonly Int32Array[];
  /** Positions per compressed row. */
  readonly ratio: number;
}

/** The rows token t reads: those picked for it, or every row closed by its position. */
function rowsOf(job: V4Attend, t: number): Int32Array {
  const picked = job.picked?.[t];
  if (picked !== undefined) return picked;
  return Int32Array.from({ length: visibleRows(job.batch.positions[t] as number, job.ratio) }, (_, s) => s);
}

/**
 * The plain reference, in f64: per token, the keys it reads gathered into [n, headDim], each head's
 * scores one dot each, the softmax with its sink, the weighted keys summed in order. attendV4 must
 * agree with it within f32 rounding (v4-attend.test.ts states the bound).
 */
export function attendV4Reference(job: V4Attend): void {
  const { batch, q, out, numHeads: nh, headDim: d, keys, rows, sinks } = job;
  for (let t = 0; t < batch.tokens.length; t++) {
    const pos = batch.positions[t] as number;
    const table = tableOf(batch, t, keys.group);
    const first = keys.placement.firstVisible(pos);
    const picked = rows ? rowsOf(job, t) : new Int32Array(0);
    const n = pos - first + 1 + picked.length;
    const K = new Float32Array(n * d);
    for (let p = first; p <= pos; p++) {
      const at = keys.placement.slot(table, p) * d;
      K.set(keys.keys.subarray(at, at + d), (p - first) * d);
    }
    if (rows) {
      const rowTable = tableOf(batch, t, rows.group);
      picked.forEach((s, i) => {
        const at = rows.placement.slot(rowTable, s) * d;
        K.set(rows.rows.subarray(at, at + d), (pos - first + 1 + i) * d);
      });
    }
    const scale = 1 / Math.sqrt(d);
    const logits = new Float64Array(n);
    const acc = new Float64Array(d);
    for (let hd = 0; hd < nh; hd++) {
      const qo = (t * nh + hd) * d;
      const sink = sinks[hd] as number;
      let max = sink;
      for (let i = 0; i < n; i++) {
        let dot = 0;
        for (let k = 0; k < d; k++) dot += (q[qo + k] as number) * (K[i * d + k] as number);
        const l = dot * scale;
        logits[i] = l;
        if (l > max) max = l;
      }
      let sum = Math.exp(sink - max);
      for (let i = 0; i < n; i++) {
        logits[i] = Math.exp((logits[i] as number) - max);
        sum += logits[i] as number;
      }
      acc.fill(0);
      for (let i = 0; i < n; i++) {
        const p = (logits[i] as number) / sum;
        for (let k = 0; k < d; k++) acc[k] = (acc[k] as number) + p * (K[i * d + k] as number);
      }
      for (let k = 0; k < d; k++) out[qo + k] = acc[k] as number;
    }
  }
}

/**
 * A layer's keys gathered for one step, when it reads compressed rows besides its window: every
 * distinct window slot and row the step's tokens read, copied once into one shared array (which
 * the pool's threads read), and each token's list of them in its reading order. Kept by the layer
 * and grown geometrically, so the pool registers few arrays with its threads. Each token lists at
 * least its own position, so no two share a table offset and the kernel tiles none together.
 */
export class V4KeyGather {
  private keys = new Float32Array(new SharedArrayBuffer(0));
  /** Per source slot (window slots first, then rows): the step that gathered it, and where. */
  private stamp = new Int32Array(0);
  private index = new Int32Array(0);
  private step = 0;

  /** The step's gathered keys and the per-token tables that list them (see attendV4). */
  gather(job: V4Attend, rows: PagedRows): { keys: Float32Array; meta: Int32Array; tables: Int32Array } {
    const { batch, keys, headDim: d } = job;
    const T = batch.tokens.length;
    const windowSlots = keys.keys.length / d;
    const sources = windowSlots + rows.rows.length / d;
    if (this.stamp.length < sources) {
      this.stamp = new Int32Array(sources);
      this.index = new Int32Array(sources);
      this.step = 0;
    }
    this.step++;
    const picks = Array.from({ length: T }, (_, t) => rowsOf(job, t));
    let listed = 0;
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      listed += pos - keys.placement.firstVisible(pos) + 1 + (picks[t] as Int32Array).length;
    }
    // A new array each step: the pool posts it to its threads, and a view would post its whole buffer.
    const lists = new Int32Array(listed);
    // At most every listed key is distinct.
    if (this.keys.length < listed * d)
      this.keys = new Float32Array(new SharedArrayBuffer(4 * Math.max(listed * d, 2 * this.keys.length)));
    const meta = new Int32Array(3 * T);
    let distinct = 0;
    let at = 0;
    const take = (source: number, from: Float32Array, offset: number) => {
      if (this.stamp[source] !== this.step) {
        this.stamp[source] = this.step;
        this.index[source] = distinct;
        this.keys.set(from.subarray(offset, offset + d), distinct * d);
        distinct++;
      }
      lists[at++] = this.index[source] as number;
    };
    for (let t = 0; t < T; t++) {
      const pos = batch.positions[t] as number;
      const start = at;
      const table = tableOf(batch, t, keys.group);
      for (let p = keys.placement.firstVisible(pos); p <= pos; p++) {
        const slot = keys.placement.slot(table, p);
        take(slot, keys.keys, slot * d);
      }
      const rowTable = tableOf(batch, t, rows.group);
      for (const s of picks[t] as Int32Array) {
        const slot = rows.placement.slot(rowTable, s);
        take(windowSlots + slot, rows.rows, slot * d);
      }
      // Token t reads "positions" 0 .. n-1 of a one-slot-per-block table: its list.
      meta[3 * t] = at - start - 1;
      meta[3 * t + 1] = 0;
      meta[3 * t + 2] = start;
    }
    return { keys: this.keys, meta, tables: lists };
  }
}

/**
 * The step's attention on the pool's attention kernel (attendTokens, in WebAssembly SIMD where
 * present), one key head that is also the value head. Without compressed rows it reads the paged
 * keys in place; with them, the keys each token reads are gathered first (V4KeyGather) and each
 * token's list is its block table of one slot per block. Each token's result depends only on its
 * own keys in its own order, so prefill, decode and chunks give the same bits.
 */
export function attendV4(pool: MatmulPool, job: V4Attend, gather: V4KeyGather): void {
  const { keys, rows, numHeads, headDim, q, out, sinks } = job;
  const common = {
    q,
    out,
    numHeads,
    numKvHeads: 1,
    headDim,
    vHeadDim: headDim,
    scale: 1 / Math.sqrt(headDim),
    sinks,
  };
  if (rows === undefined) {
    const { meta, tables } = pagedTables(job.batch, keys.placement, keys.group);
    const { blockSize, ringBlocks } = keys.placement;
    pool.attention({ ...common, meta, tables, blockSize, ringBlocks, keys: keys.keys, values: keys.keys });
    return;
  }
  const gathered = gather.gather(job, rows);
  pool.attention({
    ...common,
    meta: gathered.meta,
    tables: gathered.tables,
    blockSize: 1,
    ringBlocks: 0,
    keys: gathered.keys,
    values: gathered.keys,
  });
}
