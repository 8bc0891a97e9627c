import type { ThreadKernel } from "../kernel-thread.js";
import type { IndexerScoresSimd } from "./indexer-simd-module.js";

/** One query of an indexer dispatch (see indexerScores): its heads, their weights, its prefix of keys. */
export interface IndexerQuery {
  /** Its heads' d values each, [heads][d]. */
  readonly q: Float32Array;
  /** One f64 weight per head. */
  readonly weights: Float64Array;
  /** It scores positions [0, count) of the keys. */
  readonly count: number;
  /** Where its `count` scores go. */
  readonly scores: Float64Array;
}

/** The indexer's scores for queries that read one sequence's cached keys, as pool.indexerScores takes them. */
export interface IndexerScoresJob {
  /** The cache's keys: position p's d values start at keys[offsets[p]]. */
  readonly keys: Float32Array;
  readonly offsets: Int32Array;
  readonly d: number;
  readonly queries: readonly IndexerQuery[];
}

/** Positions a unit scores at most: a long decode splits between the threads too. */
const UNIT_POSITIONS = 512;

/** A dispatch over the staged input and output (byte offsets into the shared memory). */
export interface IndexerScoresParams {
  readonly d: number;
  /** Head pairs (heads 2j and 2j + 1, the kernel's two f64 lanes). */
  readonly pairs: number;
  /** The keys gathered into rows, [positions + 1][d] f32 (the kernel may read one row past). */
  readonly keysAt: number;
  /** Per query: the byte offsets of its f64 query pairs, its f64 weights and its f64 scores. */
  readonly queries: Int32Array;
  /** Per unit: its query, first position and end position. */
  readonly units: Int32Array;
}

/** How a job lies in the staged input and output. */
function layout(job: IndexerScoresJob) {
  const { d, queries } = job;
  const heads = queries[0]?.weights.length ?? 0;
  const pairs = (heads + 1) >> 1;
  let positions = 0;
  let scores = 0;
  for (const query of queries) {
    positions = Math.max(positions, query.count);
    scores += query.count;
  }
  // Keys [positions + 1][d] f32, then per query f64 heads [d][pairs][2] and f64 weights [2 pairs].
  const keyBytes = (4 * (positions + 1) * d + 15) & ~15;
  const perQuery = 16 * pairs * (d + 1);
  return { heads, pairs, positions, scores, keyBytes, perQuery };
}

/** Bytes of staged input and output a job needs, and the multiply-adds it does. */
export function indexerSizes(job: IndexerScoresJob): { input: number; output: number; macs: number } {
  const { heads, scores, keyBytes, perQuery } = layout(job);
  return {
    input: keyBytes + job.queries.length * perQuery,
    output: 8 * scores,
    macs: scores * heads * job.d,
  };
}

/**
 * Writes a job into the staged input at byte `inAt` (the keys gathered run by run, then each
 * query's f64 heads interleaved by pair and its weights) and zeroes its scores at byte `outAt`
 * (the kernel adds to them); returns the dispatch's parameters.
 */
export function stageIndexerScores(
  job: IndexerScoresJob,
  buffer: ArrayBufferLike,
  inAt: number,
  outAt: number,
): IndexerScoresParams {
  const { keys, offsets, d, queries } = job;
  const { heads, pairs, positions, keyBytes, perQuery } = layout(job);
  const K = new Float32Array(buffer, inAt, (positions + 1) * d);
  for (let s = 0; s < positions; ) {
    const start = offsets[s] as number;
    let run = 1;
    while (s + run < positions && offsets[s + run] === start + run * d) run++;
    K.set(keys.subarray(start, start + run * d), s * d);
    s += run;
  }
  let qAt = inAt + keyBytes;
  let sAt = outAt;
  const at = new Int32Array(3 * queries.length);
  const units: number[] = [];
  queries.forEach((query, i) => {
    const F = new Float64Array(buffer, qAt, perQuery / 8);
    // A missing odd head has query and weight zero: its dot is never positive, so it adds nothing.
    F.fill(0);
    const w = 2 * pairs * d;
    for (let h = 0; h < heads; h++) {
      // Head h is lane h % 2 of pair h / 2.
      for (let k = 0; k < d; k++) F[k * 2 * pairs + h] = query.q[h * d + k] as number;
      F[w + h] = query.weights[h] as number;
    }
    new Float64Array(buffer, sAt, query.count).fill(0);
    at.set([qAt, qAt + 8 * w, sAt], 3 * i);
    for (let s0 = 0; s0 < query.count; s0 += UNIT_POSITIONS)
      units.push(i, s0, Math.min(query.count, s0 + UNIT_POSITIONS));
    qAt += perQuery;
    sAt += 8 * query.count;
  });
  return { d, pairs, keysAt: inAt, queries: at, units: Int32Array.from(units) };
}

/** Unit u: its query's scores over its range of positions (each position's score is computed alone). */
export const indexerScoresJob: ThreadKernel<IndexerScoresParams> = {
  run(thread, job, unit) {
    const { units, queries, d } = job;
    const i = units[3 * unit] as number;
    const s0 = units[3 * unit + 1] as number;
    const s1 = units[3 * unit + 2] as number;
    const q = queries[3 * i] as number;
    const w = queries[3 * i + 1] as number;
    const s = queries[3 * i + 2] as number;
    (thread.indexer as IndexerScoresSimd).scores(
      q,
      job.pairs,
      d,
      w,
      job.keysAt + 4 * d * s0,
      s1 - s0,
      s + 8 * s0,
    );
  },
};
