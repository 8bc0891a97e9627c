import { afterAll, describe, expect, it, vi } from "vitest";
import { BlockPlacement } from "../../cache/placement.js";
import { PagedKv } from "../../cache/storage.js";
import { Rng } from "../../tensor/random.js";
import { MatmulPool } from "../pool.js";
import { wasmArena } from "../wasm-arena.js";
import { attendTokens, attendTokensSimd, attentionSimdBytes } from "./attention-kernel.js";
import { compileAttentionSimd, instantiateAttentionSimd } from "./attention-simd-module.js";
import { AttentionScratch, pagedAttention } from "./paged-attention.js";

// The plain kernel and the SIMD one, on one thread and split between two.
const pools = [false, true].flatMap((simd) => [new MatmulPool(1, { simd }), new MatmulPool(2, { simd })]);
const arena = wasmArena();
const attnModule = compileAttentionSimd();
afterAll(() => Promise.all(pools.map((p) => p.close())));

/** One step: tokens as (block table, position); a prefill chunk is a run of consecutive positions. */
type Token = { table: number[]; pos: number };

interface Case {
  spec: BlockPlacement;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vHeadDim: number;
  tokens: Token[];
  sinks: boolean;
}

function run(c: Case) {
  const rng = new Rng(5);
  const cache = new PagedKv(c.spec, 0, 64, c.numKvHeads, c.headDim, c.vHeadDim);
  rng.fillNormal(cache.keys, 1);
  rng.fillNormal(cache.values, 1);
  const T = c.tokens.length;
  const tables: number[][] = [];
  const offsets: number[] = [];
  const meta = new Int32Array(3 * T);
  c.tokens.forEach((t, i) => {
    let k = tables.indexOf(t.table);
    if (k < 0) k = tables.push(t.table) - 1;
    offsets[k] ??= tables.slice(0, k).reduce((n, b) => n + b.length, 0);
    meta.set([t.pos, c.spec.firstVisible(t.pos), offsets[k] as number], 3 * i);
  });
  const q = rng.fillNormal(new Float32Array(T * c.numHeads * c.headDim), 1);
  const sinks = c.sinks ? rng.fillNormal(new Float32Array(c.numHeads), 1) : null;
  const scale = 1 / Math.sqrt(c.headDim);
  const job = {
    meta,
    tables: Int32Array.from(tables.flat()),
    blockSize: c.spec.blockSize,
    ringBlocks: c.spec.ringBlocks,
    q,
    keys: cache.keys,
    values: cache.values,
    numHeads: c.numHeads,
    numKvHeads: c.numKvHeads,
    headDim: c.headDim,
    vHeadDim: c.vHeadDim,
    scale,
    sinks,
  };
  const ref = new Float32Array(T * c.numHeads * c.vHeadDim);
  const scratch = new AttentionScratch();
  c.tokens.forEach((t, i) => {
    pagedAttention(
      {
        q,
        qOffset: i * c.numHeads * c.headDim,
        blocks: t.table,
        pos: t.pos,
        out: ref,
        outOffset: i * c.numHeads * c.vHeadDim,
      },
      cache,
      { numHeads: c.numHeads, scale, ...(sinks === null ? {} : { sinks }) },
      scratch,
    );
  });
  const outs: Float32Array[] = pools.map((pool) => {
    const out = new Float32Array(ref.length);
    pool.attention({ ...job, out });
    return out;
  });
  // Queries and outputs in the pool's shared memory (a replayed step's buffers), used where they lie.
  for (const pool of pools.filter((p) => p.simd)) {
    const memory = pool.planMemory(4 * (q.length + ref.length));
    const [qShared, out] = [memory.float32(q.length), memory.float32(ref.length)];
    if (qShared === undefined || out === undefined) throw new Error("no shared WebAssembly memory here");
    qShared.set(q);
    pool.attention({ ...job, q: qShared, out });
    outs.push(out.slice());
  }
  // Tiles of every size, including ones that end inside a chunk, directly on this thread.
  for (const tile of [1, 3, 8, 64]) {
    const out = new Float32Array(ref.length);
    const s = { scores: new Float64Array(1), acc: new Float64Array(1), slots: new Int32Array(1) };
    attendTokens({ ...job, tile }, { ...job, out }, 0, T, s);
    outs.push(out);
  }
  // The SIMD kernel directly, with position blocks small enough to split every range.
  if (c.headDim % 4 === 0 && c.vHeadDim % 8 === 0) {
    if (arena === null || attnModule === undefined) throw new Error("WebAssembly SIMD unavailable");
    const { numHeads, numKvHeads, headDim, vHeadDim } = job;
    for (const [tile, positionBlock] of [
      [1, 5],
      [3, 5],
      [8, 7],
      [64, 128],
    ] as const) {
      const simd = instantiateAttentionSimd(attnModule, arena.memory);
      simd.bytes = attentionSimdBytes(tile, numHeads, numKvHeads, headDim, vHeadDim, 64 + tile);
      simd.base = arena.allocate(simd.bytes);
      const out = new Float32Array(ref.length);
      const s = { scores: new Float64Array(1), acc: new Float64Array(1), slots: new Int32Array(1) };
      attendTokensSimd({ ...job, tile }, { ...job, out }, 0, T, s, simd, positionBlock);
      outs.push(out);
    }
  }
  return { ref, outs };
}

const bits = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

function expectIdentical(c: Case) {
  const { ref, outs } = run(c);
  expect(ref.some((v) => v !== 0)).toBe(true);
  for (const out of outs) expect(bits(out)).toEqual(bits(ref));
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
const scattered = [9, 3, 17, 5, 30, 2, 11, 40, 8, 21, 50, 1];
const other = Array.from({ length: 12 }, (_, i) => 63 - i);
const third = [12, 14, 16, 18, 20, 22, 24, 26, 28, 31, 33, 35];
const ringTable = [7, 2, 13, 4, 9];
const ringB = [19, 23, 29, 37, 41];

describe("attention kernel", () => {
  it("equals the scalar reference bit for bit: GQA, tiles across blocks, a decode token, a mid-sequence chunk, sinks, plain and SIMD, one or two threads", () => {
    expectIdentical({
      spec: new BlockPlacement(4, 0, false),
      numHeads: 6,
      numKvHeads: 2,
      headDim: 12,
      vHeadDim: 8,
      tokens: [
        ...range(0, 40).map((pos) => ({ table: scattered, pos })),
        { table: other, pos: 44 },
        ...range(21, 47).map((pos) => ({ table: third, pos })),
      ],
      sinks: true,
    });
  });

  it("equals the reference with head sizes the SIMD kernel leaves to the plain one (dot tail, odd value size)", () => {
    expectIdentical({
      spec: new BlockPlacement(4, 0, false),
      numHeads: 4,
      numKvHeads: 2,
      headDim: 14,
      vHeadDim: 6,
      tokens: [...range(0, 30).map((pos) => ({ table: scattered, pos })), { table: other, pos: 44 }],
      sinks: true,
    });
  });

  it("equals the reference without sinks, one head of asymmetric sizes (128/64-like)", () => {
    expectIdentical({
      spec: new BlockPlacement(4, 0, false),
      numHeads: 1,
      numKvHeads: 1,
      headDim: 24,
      vHeadDim: 16,
      tokens: [...range(10, 45).map((pos) => ({ table: scattered, pos })), { table: other, pos: 30 }],
      sinks: false,
    });
  });

  it("equals the reference over a sliding window (firstVisible > 0) kept as a ring of blocks", () => {
    expectIdentical({
      spec: new BlockPlacement(4, 7, true), // a ring of 5 blocks, chunks of up to 8 tokens
      numHeads: 4,
      numKvHeads: 2,
      headDim: 16,
      vHeadDim: 8,
      // A first chunk (windows start at 0), a later chunk (windows slide, the ring wraps), a decode token.
      tokens: [
        ...range(0, 8).map((pos) => ({ table: ringTable, pos })),
        ...range(16, 24).map((pos) => ({ table: ringB, pos })),
        { table: [60, 61, 62, 0, 6], pos: 57 },
      ],
      sinks: true,
    });
  });

  it("equals the reference with three query heads a KV head (rows three at a time) over a sliding window", () => {
    expectIdentical({
      spec: new BlockPlacement(4, 7, true),
      numHeads: 9,
      numKvHeads: 3,
      headDim: 16,
      vHeadDim: 8,
      tokens: [
        ...range(16, 24).map((pos) => ({ table: ringB, pos })),
        { table: [60, 61, 62, 0, 6], pos: 57 },
        { table: ringTable, pos: 3 },
      ],
      sinks: true,
    });
  });

  it("runs a step of one token on the calling thread, whose one unit a dispatch would only wake the helpers for", () => {
    // 48 positions x 8 heads x (128 + 128) multiply-adds: past the pool's threshold for splitting.
    const decode = (tokens: Token[]) => ({
      spec: new BlockPlacement(4, 0, false),
      numHeads: 8,
      numKvHeads: 2,
      headDim: 128,
      vHeadDim: 128,
      tokens,
      sinks: true,
    });
    const dispatches = pools.map((pool) => vi.spyOn(pool as unknown as { run: () => void }, "run"));
    expectIdentical(decode([{ table: scattered, pos: 47 }]));
    for (const d of dispatches) expect(d).not.toHaveBeenCalled();
    // Two tokens are two units: the two-thread pools still split them.
    expectIdentical(
      decode([
        { table: scattered, pos: 47 },
        { table: other, pos: 40 },
      ]),
    );
    expect(dispatches.map((d) => d.mock.calls.length > 0)).toEqual(pools.map((p) => p.threads > 1));
    for (const d of dispatches) d.mockRestore();
  });

  it("equals the reference over a sliding window in the full layout (no ring)", () => {
    expectIdentical({
      spec: new BlockPlacement(4, 11, false),
      numHeads: 2,
      numKvHeads: 1,
      headDim: 8,
      vHeadDim: 8,
      tokens: range(3, 47).map((pos) => ({ table: scattered, pos })),
      sinks: false,
    });
  });
});
