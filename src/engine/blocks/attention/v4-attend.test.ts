import { afterAll, describe, expect, it } from "vitest";
import { BlockPlacement } from "../../cache/placement.js";
import { PagedKv, PagedRows } from "../../cache/storage.js";
import { MatmulPool } from "../../kernels/pool.js";
import type { ForwardBatch } from "../../model/model.js";
import { Rng } from "../../tensor/random.js";
import { maxAbsDiff } from "./mla-fixture.js";
import { attendV4, attendV4Reference, type V4Attend, V4KeyGather } from "./v4-attend.js";
import { visibleRows } from "./v4-compressor.js";

const pools = { simd: new MatmulPool(2), plain: new MatmulPool(2, { simd: false }) };
afterAll(() => Promise.all(Object.values(pools).map((p) => p.close())));

const NH = 4;
const D = 32;
const BLOCK = 4;
const RATIO = 4;
const BLOCKS = 128;

/**
 * Two sequences in one step, as a batch mixes them: a 60-token prefill chunk from position 0 and a
 * 3-token chunk from position 197, their keys and rows filled at random through block tables that
 * are not the identity. `window` 0 reads every earlier key; `picked` chooses each token's rows.
 */
function step(window: number, withRows: boolean, picked: "indexer" | "all", seed: number): V4Attend {
  const rng = new Rng(seed);
  const keys = new PagedKv(new BlockPlacement(BLOCK, window, false), 0, BLOCKS, 1, D, 0);
  const rows = new PagedRows(new BlockPlacement(BLOCK, 0, false, RATIO), 1, BLOCKS, D);
  rng.fillNormal(keys.keys, 1);
  rng.fillNormal(rows.rows, 1);
  const tables = [0, 1].map((s) => [
    Array.from({ length: 200 / BLOCK }, (_, b) => (s === 0 ? 2 * b : BLOCKS - 1 - 2 * b)),
    Array.from({ length: Math.ceil(200 / RATIO / BLOCK) }, (_, b) => (s === 0 ? b : BLOCKS - 1 - b)),
  ]);
  const positions = [...Array.from({ length: 60 }, (_, i) => i), 197, 198, 199];
  const T = positions.length;
  const batch: ForwardBatch = {
    tokens: new Int32Array(T),
    positions,
    blockTables: positions.map((_, t) => tables[t < 60 ? 0 : 1] as number[][]),
    sequences: [
      { first: 0, count: 60, slot: -1 },
      { first: 60, count: 3, slot: -1 },
    ],
    logitRows: [],
  };
  // The indexer's kind of choice: an ascending subset of the visible rows, at most 5.
  const choose = (pos: number) => {
    const visible = visibleRows(pos, RATIO);
    const all = Array.from({ length: visible }, (_, s) => s);
    return Int32Array.from(all.filter(() => rng.next() < 5 / Math.max(5, visible)).slice(0, 5));
  };
  const sinks = rng.fillNormal(new Float32Array(NH), 1);
  return {
    batch,
    q: rng.fillNormal(new Float32Array(T * NH * D), 1),
    out: new Float32Array(T * NH * D),
    numHeads: NH,
    headDim: D,
    sinks,
    keys,
    ratio: RATIO,
    ...(withRows ? { rows } : {}),
    ...(withRows && picked === "indexer" ? { picked: positions.map(choose) } : {}),
  };
}

const CASES = {
  "sliding window": [6, false, "all"],
  "window and the indexer's rows (csa)": [6, true, "indexer"],
  "window and every closed row (hca)": [6, true, "all"],
  "every earlier key (dense)": [0, false, "all"],
} as const;

describe("V4 attention on the pool's kernel", () => {
  for (const [name, [window, withRows, picked]] of Object.entries(CASES)) {
    it(`${name}: equals the f64 reference within 4 f32 ulps of the largest output`, () => {
      const job = step(window, withRows, picked, 5);
      const expected = new Float32Array(job.out.length);
      attendV4Reference({ ...job, out: expected });
      const scale = Math.max(...expected.map(Math.abs));
      for (const pool of Object.values(pools)) {
        const out = new Float32Array(job.out.length);
        attendV4(pool, { ...job, out }, new V4KeyGather());
        // f32 rounding of f64 results that differ only in the order of the same operations.
        expect(maxAbsDiff(out, expected) / scale).toBeLessThan(4 * 2 ** -23);
      }
    });
  }

  it("a token's output is the same bits alone as in a batch, SIMD or plain, one gather reused", () => {
    const job = step(6, true, "indexer", 9);
    const gather = new V4KeyGather();
    const together = new Float32Array(job.out.length);
    attendV4(pools.simd, { ...job, out: together }, gather);
    const plain = new Float32Array(job.out.length);
    attendV4(pools.plain, { ...job, out: plain }, gather);
    expect(plain).toEqual(together);
    const t = 61;
    const alone = new Float32Array(NH * D);
    const { batch } = job;
    const one: ForwardBatch = {
      tokens: new Int32Array(1),
      positions: [batch.positions[t] as number],
      blockTables: [batch.blockTables[t] as number[][]],
      sequences: [{ first: 0, count: 1, slot: -1 }],
      logitRows: [],
    };
    const q = job.q.slice(t * NH * D, (t + 1) * NH * D);
    attendV4(
      pools.simd,
      { ...job, batch: one, q, out: alone, picked: [job.picked?.[t] as Int32Array] },
      gather,
    );
    expect(alone).toEqual(together.slice(t * NH * D, (t + 1) * NH * D));
  });
});
