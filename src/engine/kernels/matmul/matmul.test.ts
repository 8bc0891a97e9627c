import { existsSync, readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { instantiateWasm } from "../../../common/wasm-runtime.js";
import { Rng } from "../../tensor/random.js";
import { shareArray, type Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";
import { matmulReference, weightAt } from "../reference.js";
import { wasmArena } from "../wasm-arena.js";
import { compileKernel } from "../wasm-kernels.js";
import { fp8Weight } from "./fp8-fixture.js";
import {
  buildDecodeTables,
  MXFP4_TABLE_BYTES,
  type Mxfp4Rows,
  matmulRange,
  mxfp4Tables,
  weightParts,
} from "./matmul-kernel.js";
import { compileSimdTile, instantiateTile, tileRegionBytes } from "./tile-module.js";

const rng = new Rng(7);

function randomWeight(dtype: Weight["dtype"], rows: number, cols: number): Weight {
  const n = rows * cols;
  switch (dtype) {
    case "f32":
      return { dtype, rows, cols, data: shareArray(rng.fillNormal(new Float32Array(n), 0.5)) };
    case "bf16":
    case "f16": {
      const bits = new Uint16Array(n);
      // Keep exponents moderate so no value is infinite or NaN.
      for (let i = 0; i < n; i++)
        bits[i] =
          dtype === "bf16"
            ? 0x3c00 + (rng.nextU32() % 0x0800) + (rng.nextU32() % 2) * 0x8000
            : 0x3000 + (rng.nextU32() % 0x0c00) + (rng.nextU32() % 2) * 0x8000;
      return { dtype, rows, cols, data: shareArray(bits) };
    }
    case "fp8_e4m3": {
      const bytes = new Uint8Array(n);
      for (let i = 0; i < n; i++) bytes[i] = (rng.nextU32() % 0x7f) | (rng.nextU32() % 2 ? 0x80 : 0);
      const blockRows = 4;
      const blockCols = 8;
      const scales = new Float32Array(Math.ceil(rows / blockRows) * Math.ceil(cols / blockCols));
      for (let i = 0; i < scales.length; i++) scales[i] = 0.01 + rng.next() * 0.05;
      return {
        dtype,
        rows,
        cols,
        data: shareArray(bytes),
        scale: { data: shareArray(scales), blockRows, blockCols },
      };
    }
    case "mxfp4": {
      const bytes = new Uint8Array(n / 2);
      for (let i = 0; i < bytes.length; i++) bytes[i] = rng.nextU32() & 0xff;
      const scales = new Uint8Array(n / 32);
      for (let i = 0; i < scales.length; i++) scales[i] = 120 + (rng.nextU32() % 8);
      return { dtype, rows, cols, data: shareArray(bytes), mxScales: shareArray(scales) };
    }
  }
}

/** The bound on f32 accumulation error against the reference: K · 2^-24 · Σ_k |x·w|. */
function errorBound(x: Float32Array, m: number, w: Weight, n: number): number {
  const K = w.cols;
  let magnitude = 0;
  for (let k = 0; k < K; k++) magnitude += Math.abs((x[m * K + k] as number) * weightAt(w, n, k));
  return K * 2 ** -24 * magnitude;
}

const pools: MatmulPool[] = [];
function pool(threads: number, simd = false, fma = true): MatmulPool {
  const p = new MatmulPool(threads, { simd, fma });
  pools.push(p);
  return p;
}
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

/** Whether V8's relaxed_madd fuses here: arm64 always has FMA; x64 says so in /proc/cpuinfo. */
const cpuHasFma =
  process.arch === "arm64" ||
  (process.arch === "x64" &&
    existsSync("/proc/cpuinfo") &&
    /^flags\s*:.*\bfma\b/m.test(readFileSync("/proc/cpuinfo", "utf8")));

describe("matmul fast path", () => {
  const dtypes: Weight["dtype"][] = ["f32", "bf16", "f16", "fp8_e4m3", "mxfp4"];
  const single = pool(1);
  const dual = pool(2);
  const simdSingle = pool(1, true);
  const simdDual = pool(2, true);
  const unfusedSingle = pool(1, true, false);
  const unfusedDual = pool(2, true, false);

  it("has WebAssembly SIMD and relaxed SIMD's fused multiply-add here, and can be forced to the plain kernel or the unfused tile", () => {
    expect(simdSingle.simd).toBe(true);
    expect(simdSingle.fma).toBe(true);
    expect(unfusedSingle.simd).toBe(true);
    expect(unfusedSingle.fma).toBe(false);
    expect(single.simd).toBe(false);
  });
  for (const [dtype, M] of dtypes.flatMap((d) => [2, 3].map((m) => [d, m] as const))) {
    it(`${dtype}, M=${M}: plain kernel equals the scalar reference bit for bit; SIMD, fused or not, within f32 rounding; all split-invariant`, () => {
      const K = 96;
      const N = 1030; // large enough to run on both threads, not a multiple of 4 so the split is ragged
      const w = randomWeight(dtype, N, K);
      const x = rng.fillNormal(new Float32Array(M * K), 1);
      const ref = new Float32Array(M * N);
      matmulReference(x, M, w, ref);
      const a = new Float32Array(M * N);
      const b = new Float32Array(M * N);
      single.matmul(x, M, w, a);
      dual.matmul(x, M, w, b);
      // Same sequential order as the reference and the same decoded values: equal bit for bit.
      expect(Array.from(a)).toEqual(Array.from(ref));
      // Same kernel, same order: splitting rows across threads changes nothing, bit for bit.
      expect(Array.from(b)).toEqual(Array.from(a));
      // The SIMD tile sums in four f32 lanes, each step fused (one rounding) or not (two): within
      // f32 accumulation error of the reference either way, and again identical however the rows
      // are split (one thread copies input and output through its scratch; two read and write the
      // staged arrays in the shared memory).
      const tiles = [
        [simdSingle, simdDual],
        [unfusedSingle, unfusedDual],
      ].map(([one, two]) => {
        const c = new Float32Array(M * N);
        const d = new Float32Array(M * N);
        (one as MatmulPool).matmul(x, M, w, c);
        (two as MatmulPool).matmul(x, M, w, d);
        expect(Array.from(d)).toEqual(Array.from(c));
        return c;
      });
      const [fused, unfused] = tiles as [Float32Array, Float32Array];
      let differ = 0;
      for (let m = 0; m < M; m++) {
        for (let n = 0; n < N; n++) {
          const i = m * N + n;
          const bound = errorBound(x, m, w, n);
          expect(Math.abs((fused[i] as number) - (ref[i] as number))).toBeLessThanOrEqual(bound);
          expect(Math.abs((unfused[i] as number) - (ref[i] as number))).toBeLessThanOrEqual(bound);
          if (fused[i] !== unfused[i]) differ++;
        }
      }
      // Fusing rounds differently: the two tiles are distinct kernels, not one built twice (on a CPU
      // without FMA, V8 computes relaxed_madd as a multiply and an add, and they agree).
      if (cpuHasFma) expect(differ).toBeGreaterThan(0);
    });
  }

  it("gives each input row the same bits whatever else is in the batch", () => {
    const K = 64;
    const N = 2048;
    const M = 5;
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    for (const [w, p] of [randomWeight("bf16", N, K), randomWeight("f32", N, K)].flatMap((w) =>
      [dual, simdDual, unfusedDual].map((p) => [w, p] as const),
    )) {
      const batched = new Float32Array(M * N);
      p.matmul(x, M, w, batched);
      for (let m = 0; m < M; m++) {
        const alone = new Float32Array(N);
        p.matmul(x.subarray(m * K, (m + 1) * K), 1, w, alone);
        expect(Array.from(alone)).toEqual(Array.from(batched.subarray(m * N, (m + 1) * N)));
      }
    }
  });

  it("runs several weights over one input in one dispatch, each exactly as alone", () => {
    const K = 64;
    const M = 3;
    const ws = [randomWeight("f32", 130, K), randomWeight("mxfp4", 62, K), randomWeight("bf16", 517, K)];
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    for (const [many, one] of [
      [dual, single],
      [simdDual, simdSingle],
      [unfusedDual, unfusedSingle],
    ] as const) {
      const outs = ws.map((w) => new Float32Array(M * w.rows));
      many.matmulMany(x, M, ws, outs);
      ws.forEach((w, i) => {
        const alone = new Float32Array(M * w.rows);
        one.matmul(x, M, w, alone);
        expect(Array.from(outs[i] as Float32Array)).toEqual(Array.from(alone));
      });
    }
  });

  it("keeps every output exact over many back-to-back dispatches whose row chunks the threads race for", () => {
    const K = 128;
    const ws = [randomWeight("f32", 700, K), randomWeight("bf16", 260, K), randomWeight("f32", 1100, K)];
    for (const [many, one] of [
      [dual, single],
      [simdDual, simdSingle],
    ] as const) {
      for (let i = 0; i < 60; i++) {
        const M = 1 + (i % 5);
        const x = rng.fillNormal(new Float32Array(M * K), 1);
        const chosen = i % 2 === 0 ? ws : [ws[2] as Weight];
        const outs = chosen.map((w) => new Float32Array(M * w.rows));
        many.matmulMany(x, M, chosen, outs);
        chosen.forEach((w, j) => {
          const alone = new Float32Array(M * w.rows);
          one.matmul(x, M, w, alone);
          expect(Array.from(outs[j] as Float32Array)).toEqual(Array.from(alone));
        });
      }
    }
  });

  it("SIMD: a weight read in place from the shared memory gives the bits of the same weight copied in", () => {
    const K = 96;
    const M = 5;
    const inArena = randomWeight("f32", 71, K);
    // The same values in a SharedArrayBuffer of their own: the kernel copies these rows per chunk.
    const copy = new Float32Array(new SharedArrayBuffer(inArena.data.byteLength));
    copy.set(inArena.data as Float32Array);
    const outside: Weight = { ...inArena, data: copy };
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    for (const p of [simdSingle, simdDual]) {
      const a = new Float32Array(M * inArena.rows);
      const b = new Float32Array(M * inArena.rows);
      p.matmul(x, M, inArena, a);
      p.matmul(x, M, outside, b);
      expect(Array.from(a)).toEqual(Array.from(b));
    }
  });

  it("SIMD: helpers read regions the calling thread placed after the shared memory grew, job after job", () => {
    // Each round grows the memory, then a larger batch makes the pool place new scratch regions and
    // staged arrays past what the helper's view covered before the grow (the job carries the
    // memory's length, and a helper whose view is shorter refreshes it). A ragged f32 tail and bf16
    // rows go through the scratch region; on a stale view the copy throws and the unpacking drops.
    const K = 64;
    const ws = [randomWeight("f32", 130, K), randomWeight("bf16", 66, K)];
    const grown = pool(2, true);
    const arena = wasmArena();
    for (let M = 1; M <= 24; M += 1) {
      arena?.allocate(3 << 16);
      const x = rng.fillNormal(new Float32Array(M * K), 1);
      const outs = ws.map((w) => new Float32Array(M * w.rows));
      grown.matmulMany(x, M, ws, outs);
      ws.forEach((w, j) => {
        const alone = new Float32Array(M * w.rows);
        simdSingle.matmul(x, M, w, alone);
        expect(Array.from(outs[j] as Float32Array)).toEqual(Array.from(alone));
      });
    }
  });

  it("rejects buffers that are too small", () => {
    const w = randomWeight("f32", 4, 8);
    expect(() => single.matmul(new Float32Array(7), 1, w, new Float32Array(4))).toThrow(/shapes disagree/);
  });
});

describe("matmulRange with the SIMD tile", () => {
  const arena = wasmArena();
  const tables = buildDecodeTables();

  it("reads the input and writes the output where they lie in the shared memory, with the bits of copied ones, for any row range and dtype", () => {
    if (arena === null) throw new Error("this runtime has no shared WebAssembly memory");
    const K = 32;
    const N = 150; // more than one chunk of rows, not a multiple of 4
    const ranges: [number, number][] = [
      [0, N],
      [3, 70],
      [62, N],
      [5, 6],
      [64, 128],
    ];
    for (const fused of [true, false]) {
      const tile = instantiateTile(compileSimdTile(fused) as object, arena.memory);
      for (const dtype of ["f32", "bf16", "fp8_e4m3", "mxfp4"] as const) {
        const w = randomWeight(dtype, N, K);
        for (const M of [1, 2, 5]) {
          tile.bytes = tileRegionBytes(M, K);
          tile.base = arena.allocate(tile.bytes);
          const xAt = arena.allocate(M * K * 4);
          const outAt = arena.allocate(M * N * 4);
          const xShared = new Float32Array(arena.memory.buffer, xAt, M * K);
          const outShared = new Float32Array(arena.memory.buffer, outAt, M * N);
          const x = rng.fillNormal(new Float32Array(M * K), 1);
          xShared.set(x);
          const run = (inPlaceX: boolean, out: Float32Array, outOffset: number, n0: number, n1: number) => {
            matmulRange(
              {
                x: inPlaceX ? xShared : x,
                xOffset: inPlaceX ? xAt : -1,
                M,
                K,
                weight: weightParts(w, arena),
                out,
                outOffset,
                N,
                n0,
                n1,
                quantized: -1,
              },
              { tables, scratch: new Float32Array(4 * K), tile, mxfp4: null },
            );
          };
          const whole = new Float32Array(M * N);
          run(false, whole, -1, 0, N);
          for (const [n0, n1] of ranges) {
            for (const inPlaceX of [false, true]) {
              for (const inPlaceOut of [false, true]) {
                const sentinel = 12345;
                const out = inPlaceOut ? outShared : new Float32Array(M * N);
                out.fill(sentinel);
                run(inPlaceX, out, inPlaceOut ? outAt : -1, n0, n1);
                // Columns in the range get the bits of the whole matmul; no other column is touched.
                const expected = whole.map((v, i) => (i % N >= n0 && i % N < n1 ? v : sentinel));
                expect(Array.from(out)).toEqual(Array.from(expected));
              }
            }
          }
        }
      }
    }
  });
});

/** Pools over the fused MXFP4 and FP8 rows and over the unpacked path, on one thread and two. */
function fusedAndUnpacked(more: MatmulPool[] = []): { fused: MatmulPool[]; unpacked: MatmulPool[] } {
  const unpacked = [1, 2].map((t) => {
    const p = new MatmulPool(t, { simd: true, mxfp4: "unpacked" });
    pools.push(p);
    return p;
  });
  return { fused: [pool(1, true), pool(2, true), ...more], unpacked };
}

const bitsOf = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

/**
 * Expects every pool's matmul of `w` (`more` beside the default fused ones) to give the unpacked
 * path's bits at each batch size, and each input row's outputs to be those of that row alone
 * (batch invariance); returns the pools.
 */
function expectUnpackedBits(
  w: Weight,
  batches = [1, 2, 3],
  more: MatmulPool[] = [],
): ReturnType<typeof fusedAndUnpacked> {
  const pools = fusedAndUnpacked(more);
  const [N, K] = [w.rows, w.cols];
  for (const M of batches) {
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    const want = new Float32Array(M * N);
    (pools.unpacked[0] as MatmulPool).matmul(x, M, w, want);
    for (const p of [...pools.fused, ...pools.unpacked]) {
      const got = new Float32Array(M * N);
      p.matmul(x, M, w, got);
      expect(bitsOf(got)).toEqual(bitsOf(want));
    }
    for (const p of pools.fused) {
      for (let m = 0; m < M; m++) {
        const alone = new Float32Array(N);
        p.matmul(x.subarray(m * K, (m + 1) * K), 1, w, alone);
        expect(bitsOf(alone)).toEqual(bitsOf(want.subarray(m * N, (m + 1) * N)));
      }
    }
  }
  return pools;
}

describe("the fused MXFP4 matmul (matmul/mxfp4-rows.wat)", () => {
  it("decodes every code at every exponent, by table, to the value the unpacked path multiplies out", () => {
    // Row e has exponent e and value k holds code k mod 16, so an input of one at k reads that back.
    const N = 256;
    const K = 32;
    const data = new Uint8Array((N * K) / 2);
    for (let i = 0; i < data.length; i++) data[i] = ((2 * i) & 15) | (((2 * i + 1) & 15) << 4);
    const w: Weight = {
      dtype: "mxfp4",
      rows: N,
      cols: K,
      data: shareArray(data),
      mxScales: shareArray(Uint8Array.from({ length: N }, (_, e) => e)),
    };
    const scratch = new MatmulPool(1, { simd: true, mxfp4ScratchTokens: 1 });
    pools.push(scratch);
    const { fp4, e8m0 } = buildDecodeTables();
    for (let code = 0; code < 16; code++) {
      const x = new Float32Array(K);
      x[code + 16] = 1;
      const got = new Float32Array(N);
      scratch.matmul(x, 1, w, got);
      // The lane sums give +0 for a weight of -0, and NaN where the row holds an infinite value
      // (zero times it) or its exponent is 255.
      const want = Array.from(e8m0, (s) => {
        const v = Math.fround((fp4[code] as number) * s);
        return Number.isFinite(Math.fround(6 * s)) ? v + 0 : Number.NaN;
      });
      expect(Array.from(got)).toEqual(want);
    }
  });

  it("decodes to the same bits with plain swizzles (runtimes without relaxed SIMD) as with relaxed ones", () => {
    const arena = wasmArena();
    const [relaxed, plain] = [
      compileKernel("matmul/mxfp4-decode"),
      compileKernel("matmul/mxfp4-decode.plain-swizzle"),
    ];
    if (arena === null || relaxed === undefined || plain === undefined) throw new Error("SIMD unavailable");
    // Every byte of codes at every exponent: 256 blocks of 16 bytes, block e at exponent e.
    const tables = arena.allocate(MXFP4_TABLE_BYTES);
    new Uint8Array(arena.memory.buffer, tables, MXFP4_TABLE_BYTES).set(mxfp4Tables());
    const blocks = arena.allocate(256 * 16);
    new Uint8Array(arena.memory.buffer, blocks, 256 * 16).set(
      Uint8Array.from({ length: 4096 }, (_, i) => i & 255),
    );
    const scales = arena.allocate(256);
    new Uint8Array(arena.memory.buffer, scales, 256).set(Uint8Array.from({ length: 256 }, (_, e) => e));
    const outs = [relaxed, plain].map((module) => {
      const out = arena.allocate(256 * 128);
      (instantiateWasm(module, arena.memory) as { decode: Mxfp4Rows["decode"] }).decode(
        blocks,
        scales,
        tables,
        out,
        256,
      );
      return new Float32Array(arena.memory.buffer, out, 256 * 32);
    });
    expect(bitsOf(outs[1] as Float32Array)).toEqual(bitsOf(outs[0] as Float32Array));
  });

  it("gives the unpacked path's bits on every byte of codes and on extreme scales, at any batch and split, decoding in the loop or into scratch", () => {
    const N = 70; // more than one chunk of rows
    const K = 64;
    const data = new Uint8Array((N * K) / 2);
    // Every byte value (so every pair of nibbles) several times, in rows of different scales.
    for (let i = 0; i < data.length; i++) data[i] = (i * 37 + (i >> 8)) & 255;
    const extremes = [0, 1, 2, 126, 127, 128, 253, 254, 255];
    const mxScales = new Uint8Array((N * K) / 32);
    for (let i = 0; i < mxScales.length; i++)
      mxScales[i] = i < 2 * extremes.length ? (extremes[i >> 1] as number) : 110 + ((i * 7) % 30);
    const w: Weight = {
      dtype: "mxfp4",
      rows: N,
      cols: K,
      data: shareArray(data),
      mxScales: shareArray(mxScales),
    };
    // Decoding inside the loop (few input rows), into scratch for the tile (many), or chosen by M.
    const forms = [1, Number.POSITIVE_INFINITY].flatMap((mxfp4ScratchTokens) =>
      [1, 2].map((t) => {
        const p = new MatmulPool(t, { simd: true, mxfp4ScratchTokens });
        pools.push(p);
        return p;
      }),
    );
    const { fused } = expectUnpackedBits(w, [1, 2, 3, 8, 13], forms);
    // Scale 255 is NaN: the rows that use it come out NaN, the others finite.
    const out = new Float32Array(N);
    (fused[0] as MatmulPool).matmul(rng.fillNormal(new Float32Array(K), 1), 1, w, out);
    expect(Number.isNaN(out[8])).toBe(true);
    expect(Number.isFinite(out[20])).toBe(true);
  });
});

const FP8_ORDERS = ["file", "lanes", "quads"] as const;

describe("the fused FP8 matmul (matmul/fp8-rows.wat)", () => {
  it.each(FP8_ORDERS)(
    "decodes every code byte as the plain reference does, at extreme scales, codes in %s order",
    (order) => {
      // Row n holds code n at k = 5, zeros elsewhere, so that input alone reads back the decoded weight.
      const N = 256;
      const K = 32;
      const codes = new Uint8Array(N * K);
      for (let n = 0; n < N; n++) codes[n * K + 5] = n;
      const x = new Float32Array(K);
      x[5] = 1;
      const { fused } = fusedAndUnpacked();
      // f32 subnormal, tiny, one, the E8M0 extremes, one that overflows the large codes, not a power of two.
      for (const s of [2 ** -149, 2 ** -127, 2 ** -64, 1, 2 ** 7, 2 ** 120, 2 ** 127, 3.1e-3, 1e38]) {
        const scale = new Float32Array(N).fill(s);
        const w = fp8Weight(codes, N, K, scale, 1, 32, order);
        const want = Array.from({ length: N }, (_, n) => weightAt(w, n, 5));
        expect(want[0x38]).toBe(Math.fround(s)); // 0x38 is 1.0: the reference reads the order too
        const got = new Float32Array(N);
        (fused[0] as MatmulPool).matmul(x, 1, w, got);
        // The lane sums give +0 for a weight of -0; every other value must be the reference's.
        expect(Array.from(got)).toEqual(want.map((v) => (v === 0 ? 0 : Math.fround(v))));
        expect(Number.isNaN(got[0x7f]) && Number.isNaN(got[0xff])).toBe(true);
      }
    },
  );

  it.each(FP8_ORDERS)(
    "gives the unpacked path's bits for every code byte and scale layout, at any batch and split, codes in %s order",
    (order) => {
      const N = order === "quads" ? 148 : 150; // more than two chunks of rows, ragged (quads: whole groups)
      const K = 512;
      const codes = new Uint8Array(N * K);
      // Every byte value many times over, but NaN's two (decoded above), which would make each sum NaN.
      for (let i = 0; i < codes.length; i++) {
        const code = (i * 37 + (i >> 9)) & 255;
        codes[i] = (code & 0x7f) === 0x7f ? code - 1 : code;
      }
      // 1x32 (the MXFP4 conversion's), bands of rows that do not divide a chunk, 128x128 tiles.
      for (const [blockRows, blockCols] of [
        [1, 32],
        [3, 64],
        [128, 128],
      ] as const) {
        const scale = new Float32Array(Math.ceil(N / blockRows) * Math.ceil(K / blockCols));
        for (let i = 0; i < scale.length; i++) scale[i] = 2 ** ((i % 40) - 20) * (1 + (i % 3) / 4);
        const w = fp8Weight(codes, N, K, scale, blockRows, blockCols, order);
        const { unpacked } = expectUnpackedBits(w);
        // The order changes no bit: the unpacked path's outputs are those of the codes in file order.
        const x = rng.fillNormal(new Float32Array(2 * K), 1);
        const [got, want] = [new Float32Array(2 * N), new Float32Array(2 * N)];
        (unpacked[0] as MatmulPool).matmul(x, 2, w, got);
        (unpacked[0] as MatmulPool).matmul(x, 2, fp8Weight(codes, N, K, scale, blockRows, blockCols), want);
        expect(bitsOf(got)).toEqual(bitsOf(want));
      }
    },
  );

  it("stays within f32 accumulation error of the reference on finite codes", () => {
    const N = 70;
    const K = 96;
    const codes = new Uint8Array(N * K);
    for (let i = 0; i < codes.length; i++) codes[i] = (rng.nextU32() % 0x7f) | (rng.nextU32() % 2 ? 0x80 : 0);
    const scale = new Float32Array(N * 3);
    for (let i = 0; i < scale.length; i++) scale[i] = 2 ** ((i % 9) - 12);
    const w = fp8Weight(codes, N, K, scale, 1, 32);
    const M = 2;
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    const want = new Float32Array(M * N);
    matmulReference(x, M, w, want);
    const got = new Float32Array(M * N);
    fusedAndUnpacked().fused[0]?.matmul(x, M, w, got);
    for (let m = 0; m < M; m++)
      for (let n = 0; n < N; n++)
        expect(Math.abs((got[m * N + n] as number) - (want[m * N + n] as number))).toBeLessThanOrEqual(
          errorBound(x, m, w, n),
        );
  });
});
