import { afterAll, describe, expect, it } from "vitest";
import { instantiateWasm } from "../../../common/wasm-runtime.js";
import { toHalves } from "../../../formats/mxfp4-halves.js";
import { Rng } from "../../tensor/random.js";
import { shareArray, type Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";
import { weightAt } from "../reference.js";
import { wasmArena } from "../wasm-arena.js";
import { compileKernel } from "../wasm-kernels.js";
import { int8ExponentBytes, int8ExponentStride, layInt8Exponents } from "./int8-exponents.js";
import { buildDecodeTables } from "./matmul-kernel.js";
import {
  INT8_BLOCK_BYTES,
  type Int8Quantize,
  type Mxfp4Int8,
  quantizedBytes,
  quantizedFormBytes,
  quantizeInput,
} from "./mxfp4-int8.js";

const rng = new Rng(11);
const pools = [1, 2].map((t) => new MatmulPool(t, { mxfp4: "int8" }));
afterAll(() => Promise.all(pools.map((p) => p.close())));

function mxfp4Weight(rows: number, cols: number, scale: (i: number) => number): Weight {
  const data = Uint8Array.from({ length: (rows * cols) / 2 }, () => rng.nextU32() & 255);
  const mxScales = Uint8Array.from({ length: (rows * cols) / 32 }, (_, i) => scale(i));
  return { dtype: "mxfp4", rows, cols, data: shareArray(data), mxScales: shareArray(mxScales) };
}

/**
 * The integer path's arithmetic written plainly: each block's sum of quantized input times twice
 * the E2M1 value as an integer, times the block's scales (their product rounded to f32), added to
 * an f32 sum in ascending blocks.
 */
function int8Reference(x: Float32Array, M: number, w: Weight): Float32Array {
  const { rows: N, cols: K } = w;
  const blocks = K / 32;
  const buffer = new ArrayBuffer(quantizedBytes(M, K));
  quantizeInput(x, M, K, buffer, 0);
  const q = new Int8Array(buffer);
  const words = new Float32Array(buffer);
  const tables = buildDecodeTables();
  const codes = w.data as Uint8Array;
  const out = new Float32Array(M * N);
  for (let n = 0; n < N; n++) {
    for (let m = 0; m < M; m++) {
      let acc = 0;
      for (let b = 0; b < blocks; b++) {
        const at = (m * blocks + b) * INT8_BLOCK_BYTES;
        const scale = Math.fround(
          (words[((m * blocks + b) * INT8_BLOCK_BYTES + 48) / 4] as number) *
            ((tables.e8m0[(w.mxScales as Uint8Array)[n * blocks + b] as number] as number) / 2),
        );
        let sum = 0;
        for (let j = 0; j < 16; j++) {
          const byte = codes[(n * K) / 2 + 16 * b + j] as number;
          sum += (q[at + j] as number) * 2 * (tables.fp4[byte & 15] as number);
          sum += (q[at + 16 + j] as number) * 2 * (tables.fp4[byte >> 4] as number);
        }
        acc = Math.fround(acc + Math.fround(sum * scale));
      }
      out[m * N + n] = acc;
    }
  }
  return out;
}

const bitsOf = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe("the integer MXFP4 matmul (matmul/mxfp4-int8.wat)", () => {
  it("runs where WebAssembly SIMD does, and gives its plain arithmetic's bits at any batch and split", () => {
    expect(pools.map((p) => p.mxfp4)).toEqual(["int8", "int8"]);
    // The second weight is large enough for the two-thread pool to split its rows between threads,
    // which read the input the pool quantized once; the first stays on the calling thread.
    for (const w of [
      mxfp4Weight(70, 96, (i) => 110 + ((i * 7) % 30)),
      mxfp4Weight(302, 256, (i) => 118 + (i % 9)),
    ]) {
      for (const M of [1, 2, 5]) {
        const x = rng.fillNormal(new Float32Array(M * w.cols), 1);
        // A zero block, and a block of one large value among small ones.
        x.fill(0, 0, 32);
        if (M > 1) x[w.cols + 40] = 300;
        const want = int8Reference(x, M, w);
        for (const pool of pools) {
          const got = new Float32Array(M * w.rows);
          pool.matmul(x, M, w, got);
          expect(bitsOf(got)).toEqual(bitsOf(want));
        }
      }
    }
  });

  it("reads codes in halves order to the same bits as in OCP order, edge exponents too", () => {
    // Exponents over all of [2, 254] (half scales 2^-126 to 2^126: outputs from zero through
    // subnormal to infinite), and the common ones.
    for (const scale of [(i: number) => 2 + ((i * 37) % 253), (i: number) => 118 + (i % 8)]) {
      const ocp = mxfp4Weight(70, 96, scale);
      const halves: Weight = {
        ...ocp,
        data: shareArray(toHalves(ocp.data as Uint8Array)),
        mxfp4Order: "halves",
      };
      for (const M of [1, 3]) {
        const x = rng.fillNormal(new Float32Array(M * ocp.cols), 1);
        x.fill(0, 32, 64);
        const want = int8Reference(x, M, ocp);
        for (const pool of pools) {
          const got = new Float32Array(M * ocp.rows);
          pool.matmul(x, M, halves, got);
          expect(bitsOf(got)).toEqual(bitsOf(want));
        }
      }
    }
  });

  it("leaves a weight with an exponent outside [2, 254] to the exact path, as unpacked", async () => {
    const unpacked = new MatmulPool(1, { mxfp4: "unpacked" });
    try {
      for (const odd of [0, 1, 255]) {
        const w = mxfp4Weight(8, 64, (i) => (i === 5 ? odd : 120 + (i % 4)));
        const x = rng.fillNormal(new Float32Array(2 * w.cols), 1);
        const want = new Float32Array(2 * w.rows);
        unpacked.matmul(x, 2, w, want);
        const got = new Float32Array(2 * w.rows);
        (pools[0] as MatmulPool).matmul(x, 2, w, got);
        expect(bitsOf(got)).toEqual(bitsOf(want));
      }
    } finally {
      await unpacked.close();
    }
  });

  it("stays within the error it states of the exact sums: (s/2)·Σ|w| per block plus f32 rounding", () => {
    const w = mxfp4Weight(64, 2048, (i) => 118 + (i % 8));
    const M = 3;
    const K = w.cols;
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    const got = new Float32Array(M * w.rows);
    (pools[1] as MatmulPool).matmul(x, M, w, got);
    let worst = 0;
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < w.rows; n++) {
        let exact = 0;
        let quantization = 0;
        let terms = 0;
        for (let b = 0; b < K / 32; b++) {
          let amax = 0;
          let wsum = 0;
          for (let k = 32 * b; k < 32 * b + 32; k++) {
            const xv = x[m * K + k] as number;
            const wv = weightAt(w, n, k);
            exact += xv * wv;
            amax = Math.max(amax, Math.abs(xv));
            wsum += Math.abs(wv);
            terms += Math.abs(xv * wv);
          }
          quantization += (amax / 127 / 2) * (1 + 2 ** -16) * wsum;
        }
        const bound = quantization + (K / 32 + 2) * 2 ** -24 * (terms + quantization);
        const error = Math.abs((got[m * w.rows + n] as number) - exact);
        expect(error).toBeLessThanOrEqual(bound);
        worst = Math.max(worst, error / bound);
      }
    }
    // The bound is not slack by orders of magnitude: typical errors reach a visible share of it.
    expect(worst).toBeGreaterThan(0.01);
  });

  it("quantizes in WebAssembly to its plain reference's bytes: ties to even, zero and non-finite blocks", () => {
    const arena = wasmArena();
    const module = compileKernel("matmul/mxfp4-int8");
    if (arena === null || module === undefined) throw new Error("SIMD unavailable");
    const quantize = (instantiateWasm(module, arena.memory) as { quantize: Int8Quantize }).quantize;
    const [M, K] = [3, 512];
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    // Block by block: magnitudes from 2^-140 (subnormal) to 2^100; ties (s = 2, x / s = -14.5 to
    // 15.5); zeros, with -0; NaN; infinity; a lone subnormal.
    for (let b = 0; b < (M * K) / 32; b++) {
      const scale = 2 ** (((b * 37) % 240) - 140);
      for (let k = 32 * b; k < 32 * b + 32; k++) x[k] = (x[k] as number) * scale;
    }
    x.set(
      Float32Array.from({ length: 32 }, (_, k) => (k === 0 ? 254 : 2 * k - 31)),
      32,
    );
    x.fill(0, 64, 96);
    x[70] = -0;
    x[100] = Number.NaN;
    x[140] = Number.POSITIVE_INFINITY;
    x.fill(0, 160, 192);
    x[170] = 2 ** -149;
    const xAt = arena.allocate(M * K * 4);
    new Float32Array(arena.memory.buffer, xAt, M * K).set(x);
    const bytes = quantizedBytes(M, K);
    const q = arena.allocate(bytes);
    quantize(xAt, M, K, q);
    const want = new Uint8Array(bytes);
    quantizeInput(x, M, K, want.buffer, 0);
    expect(Buffer.from(new Uint8Array(arena.memory.buffer, q, bytes)).equals(Buffer.from(want))).toBe(true);
    // The ties went to even, up and down (x[32] = 254 is q = 127, at byte 0 of block 1), and the
    // NaN and infinite blocks' scales are NaN.
    const block = new Int8Array(want.buffer, INT8_BLOCK_BYTES, 32);
    const ties = Array.from({ length: 31 }, (_, i) => i + 1).map((k) => ({
      q: block[k % 2 === 0 ? k / 2 : 16 + (k - 1) / 2] as number,
      v: (x[32 + k] as number) / 2,
    }));
    expect(ties.every(({ q }) => q % 2 === 0)).toBe(true);
    expect(new Set(ties.map(({ q, v }) => Math.abs(q - v)))).toEqual(new Set([0.5]));
    expect(new Set(ties.map(({ q, v }) => Math.sign(q - v)))).toEqual(new Set([-1, 1]));
    const scaleOf = (b: number) => new Float32Array(want.buffer, b * INT8_BLOCK_BYTES + 48, 1)[0];
    expect([scaleOf(3), scaleOf(4), scaleOf(2)]).toEqual([Number.NaN, Number.NaN, 0]);
  });

  it("has a plain-SIMD form (no relaxed dot) with the same bits, for runtimes without relaxed SIMD, in either code order", () => {
    const arena = wasmArena();
    const relaxed = compileKernel("matmul/mxfp4-int8");
    const plain = compileKernel("matmul/mxfp4-int8.plain-dot");
    if (arena === null || relaxed === undefined || plain === undefined) throw new Error("SIMD unavailable");
    const [N, K, M] = [8, 64, 2];
    const w = mxfp4Weight(N, K, (i) => 120 + (i % 5));
    const x = rng.fillNormal(new Float32Array(M * K), 1);
    const blocks = arena.allocate(w.data.byteLength);
    const exps = arena.allocate(int8ExponentBytes(N, K));
    new Uint8Array(arena.memory.buffer, blocks, w.data.byteLength).set(w.data as Uint8Array);
    layInt8Exponents(w.mxScales as Uint8Array, N, K, arena.memory.buffer, exps);
    const q = arena.allocate(quantizedBytes(M, K));
    quantizeInput(x, M, K, arena.memory.buffer, q);
    // The same codes in halves order, read with the input's halves form.
    const halves = arena.allocate(w.data.byteLength);
    new Uint8Array(arena.memory.buffer, halves, w.data.byteLength).set(toHalves(w.data as Uint8Array));
    const want = bitsOf(int8Reference(x, M, w));
    for (const [codes, form] of [
      [blocks, q],
      [halves, q + quantizedFormBytes(M, K)],
    ] as const) {
      for (const module of [relaxed, plain]) {
        const o = arena.allocate(4 * M * N);
        const run = (instantiateWasm(module, arena.memory) as { mxfp4_int8: Mxfp4Int8 }).mxfp4_int8;
        run(K, M, form, codes, exps, int8ExponentStride(N), o, N, 4 * N);
        expect(bitsOf(new Float32Array(arena.memory.buffer, o, M * N))).toEqual(want);
      }
    }
  });

  it("walks a list of matmuls (mxfp4_int8_list) to the bits of one call each, a bias added after", () => {
    const arena = wasmArena();
    const module = compileKernel("matmul/mxfp4-int8");
    if (arena === null || module === undefined) throw new Error("SIMD unavailable");
    const { mxfp4_int8_list: list } = instantiateWasm(module, arena.memory) as {
      mxfp4_int8_list: (list: number, count: number) => void;
    };
    const put = (bytes: Uint8Array) => {
      const at = arena.allocate(bytes.byteLength);
      new Uint8Array(arena.memory.buffer, at, bytes.byteLength).set(bytes);
      return at;
    };
    // Four rows and more with a bias, fewer than four with one, and two input rows without.
    const cases = [
      { N: 8, K: 64, M: 1, bias: true },
      { N: 3, K: 96, M: 1, bias: true },
      { N: 5, K: 32, M: 2, bias: false },
    ].map(({ N, K, M, bias }) => {
      const w = mxfp4Weight(N, K, (i) => 116 + (i % 11));
      const x = rng.fillNormal(new Float32Array(M * K), 1);
      const q = arena.allocate(quantizedBytes(M, K));
      quantizeInput(x, M, K, arena.memory.buffer, q);
      const exps = arena.allocate(int8ExponentBytes(N, K));
      layInt8Exponents(w.mxScales as Uint8Array, N, K, arena.memory.buffer, exps);
      const b = rng.fillNormal(new Float32Array(N), 1);
      const o = arena.allocate(4 * M * N);
      const args = [K, M, q, put(w.data as Uint8Array), exps, int8ExponentStride(N), o, N, 4 * N];
      const want = int8Reference(x, M, w).map((v, i) => (bias ? v + (b[i % N] as number) : v));
      return { args: [...args, bias ? put(new Uint8Array(b.buffer)) : -1], o, length: M * N, want };
    });
    const at = arena.allocate(40 * cases.length);
    new Int32Array(arena.memory.buffer, at, 10 * cases.length).set(cases.flatMap((c) => c.args));
    list(at, cases.length);
    for (const { o, length, want } of cases)
      expect(bitsOf(new Float32Array(arena.memory.buffer, o, length))).toEqual(bitsOf(want));
  });

  it("reads nothing past a weight that ends the memory, at any ragged row count (its read-ahead too)", () => {
    const module = compileKernel("matmul/mxfp4-int8");
    if (module === undefined) throw new Error("SIMD unavailable");
    // One page: the input, output and exponents first, the codes ending it exactly; then the
    // exponents alone ending it.
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    const run = (instantiateWasm(module, memory) as { mxfp4_int8: Mxfp4Int8 }).mxfp4_int8;
    const K = 1024;
    const q = 0;
    const x = rng.fillNormal(new Float32Array(K), 1);
    quantizeInput(x, 1, K, memory.buffer, q);
    const o = q + quantizedBytes(1, K);
    for (const N of [1, 2, 5, 6, 7, 9, 13]) {
      const w = mxfp4Weight(N, K, (i) => 118 + (i % 8));
      const end = memory.buffer.byteLength;
      for (const [blocks, exps] of [
        [end - w.data.byteLength, o + 4 * N],
        [o + 4 * N, end - int8ExponentBytes(N, K)],
      ] as const) {
        new Uint8Array(memory.buffer, blocks, w.data.byteLength).set(w.data as Uint8Array);
        layInt8Exponents(w.mxScales as Uint8Array, N, K, memory.buffer, exps);
        run(K, 1, q, blocks, exps, int8ExponentStride(N), o, N, 4 * N);
        expect(bitsOf(new Float32Array(memory.buffer, o, N))).toEqual(bitsOf(int8Reference(x, 1, w)));
      }
    }
  });
});
