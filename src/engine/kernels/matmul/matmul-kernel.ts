import { lanesIndex } from "../../../formats/fp8-lanes.js";
import { quadsIndex } from "../../../formats/fp8-quads.js";
import { HALVES_ORDER } from "../../../formats/mxfp4-halves.js";
import { quadRow, quadRows, toRowQuads } from "../../tensor/row-quads.js";
import { DTYPE_CODE, type Weight } from "../../tensor/weight.js";
import type { WasmArena } from "../wasm-arena.js";
import { fp8FoldedScalesAt } from "./fp8-folded-scales.js";
import { hasFp8NanCode } from "./fp8-nan-codes.js";
import { type Fp8Rows, fp8Step } from "./fp8-rows.js";
import { int8ExponentStride, int8ExponentsAt } from "./int8-exponents.js";
import { type Int8Quantize, type Mxfp4Int8, quantizedFormBytes } from "./mxfp4-int8.js";
import { type SimdTile, TILE_CHUNK, tileRegionBytes } from "./tile-module.js";

/** The fast matmul kernel, run on the calling thread and in the pool's workers (worker.ts). */

/** Decoding tables for the narrow dtypes: f16 (65536), fp8 e4m3fn (256), e2m1 (16), e8m0 (256). */
export interface DecodeTables {
  f16: Float32Array;
  fp8: Float32Array;
  fp4: Float32Array;
  e8m0: Float32Array;
}

export function buildDecodeTables(): DecodeTables {
  const f16 = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const man = h & 0x3ff;
    if (exp === 0) f16[h] = sign * man * 2 ** -24;
    else if (exp === 31) f16[h] = man === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
    else f16[h] = sign * (1 + man / 1024) * 2 ** (exp - 15);
  }
  const fp8 = new Float32Array(256);
  for (let b = 0; b < 256; b++) {
    const sign = b & 0x80 ? -1 : 1;
    const exp = (b >> 3) & 0xf;
    const man = b & 7;
    if (exp === 15 && man === 7) fp8[b] = Number.NaN;
    else if (exp === 0) fp8[b] = sign * (man / 8) * 2 ** -6;
    else fp8[b] = sign * (1 + man / 8) * 2 ** (exp - 7);
  }
  const fp4 = new Float32Array(16);
  for (let b = 0; b < 16; b++) {
    const sign = b & 8 ? -1 : 1;
    const exp = (b >> 1) & 3;
    const man = b & 1;
    fp4[b] = exp === 0 ? sign * man * 0.5 : sign * (1 + man / 2) * 2 ** (exp - 1);
  }
  const e8m0 = new Float32Array(256);
  for (let e = 0; e < 256; e++) e8m0[e] = e === 255 ? Number.NaN : 2 ** (e - 127);
  return { f16, fp8, fp4, e8m0 };
}

/** Bytes of mxfp4Tables: 256 f32 half scales, then 32 bytes for each of the 256 exponents. */
export const MXFP4_TABLE_BYTES = 1024 + 256 * 32;

/**
 * The MXFP4 kernels' tables, which the pool places once in the shared memory. At byte 0 the half
 * E8M0 scales 2^(e - 128) as 256 f32 (NaN at 255), which matmul/mxfp4-int8.wat multiplies by. At
 * byte 1024 + 32e, for exponent e, bytes 2 then bytes 3 of the f32 values of the 16 E2M1 codes at
 * that exponent (16 bytes each), for matmul/mxfp4-decode.wat and matmul/mxfp4-rows.wat.
 * Each value is the exact product (2·E2M1(code)) · 2^(e - 128), so a code of -0 gives
 * +0 and every code gives NaN at 255; an E2M1 value has at most two significant bits and none below
 * 2^-128 here, so bytes 0 and 1 of every value are zero and the two bytes are all of it.
 */
export function mxfp4Tables(): Uint8Array {
  const bytes = new Uint8Array(MXFP4_TABLE_BYTES);
  const half = buildDecodeTables().e8m0.map((s) => s / 2);
  new Float32Array(bytes.buffer, 0, 256).set(half);
  const twice = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];
  const value = new Float32Array(1);
  const bits = new Uint32Array(value.buffer);
  for (let e = 0; e < 256; e++) {
    for (let code = 0; code < 16; code++) {
      value[0] = (twice[code] as number) * (half[e] as number);
      bytes[1024 + 32 * e + code] = ((bits[0] as number) >>> 16) & 255;
      bytes[1024 + 32 * e + 16 + code] = (bits[0] as number) >>> 24;
    }
  }
  return bytes;
}

/** Which value of its block of 32 the low nibble of byte j holds, in OCP order (2j; 2j + 1 above). */
const OCP_LOW: readonly number[] = Array.from({ length: 16 }, (_, j) => 2 * j);

/** A weight as the kernel reads it: its storage dtype's code (DTYPE_CODE) and its arrays. */
export interface WeightParts {
  readonly dtype: number;
  readonly data: Float32Array | Uint16Array | Uint8Array;
  /** Byte offset of `data` inside the shared WebAssembly memory, or -1 when it lies elsewhere. */
  readonly offset: number;
  /** Byte offset of `mxScales` (FP8: of the scale blocks' `scaleData`) there, or -1. */
  readonly scalesOffset: number;
  readonly scaleData: Float32Array | null;
  readonly scaleBlockRows: number;
  readonly scaleBlockCols: number;
  readonly mxScales: Uint8Array | null;
  /** MXFP4 codes in halves order (Weight.mxfp4Order). */
  readonly halves: boolean;
  /** Byte offset of the exponents laid out for the integer MXFP4 path (int8-exponents.ts), or -1. */
  readonly int8Exponents: number;
  /** Whether an f32 weight's rows lie in row quads (tensor/row-quads.ts) rather than row-major. */
  readonly quads: boolean;
  /**
   * Byte offset of an FP8 weight's scales times 2^120 in the arena (fp8-folded-scales.ts), as
   * matmul/fp8-rows.wat's fp8 reads them, or -1: a weight with a scale from 2^8 up (none in the
   * checkpoints seen) takes the decode into scratch.
   */
  readonly fp8FoldedScales: number;
  /** Whether an FP8 weight has no NaN code, so its rows take Fp8Kernels' rowsNanFree. */
  readonly fp8NanFree: boolean;
  /** FP8 codes' order (Weight.fp8Order), whose Fp8Rows kernels read them. */
  readonly fp8Order: "file" | "lanes" | "quads";
}

/**
 * The kernel's view of `w`; f32, MXFP4 and block-scaled FP8 weights the arena holds are read in
 * place by the SIMD kernels. With `int8` (the integer MXFP4 path is chosen) an MXFP4 weight in the
 * arena also gets its exponents laid out for that path (int8-exponents.ts).
 */
export function weightParts(w: Weight, arena: WasmArena | null, int8 = false): WeightParts {
  const scales = w.mxScales ?? w.scale?.data;
  const offset = arena === null ? -1 : arena.offsetOf(w.data);
  const int8Exponents =
    int8 && arena !== null && offset >= 0 && w.mxScales !== undefined
      ? int8ExponentsAt(w.mxScales, w.rows, w.cols, arena)
      : -1;
  return {
    dtype: DTYPE_CODE[w.dtype],
    data: w.data,
    offset,
    scalesOffset: arena === null || scales === undefined ? -1 : arena.offsetOf(scales),
    scaleData: w.scale?.data ?? null,
    scaleBlockRows: w.scale?.blockRows ?? 1,
    scaleBlockCols: w.scale?.blockCols ?? 1,
    mxScales: w.mxScales ?? null,
    halves: w.mxfp4Order === "halves",
    int8Exponents,
    quads: w.layout === "row-quads",
    fp8FoldedScales: arena === null || w.scale === undefined ? -1 : fp8FoldedScalesAt(w.scale.data, arena),
    fp8NanFree: w.dtype === "fp8_e4m3" && !hasFp8NanCode(w.data as Uint8Array),
    fp8Order: w.fp8Order ?? "file",
  };
}

/**
 * Whether the integer MXFP4 path reads this weight where the thread has that path: MXFP4 in the
 * shared memory, codes in either order, its exponents laid out for the path (not where one lies
 * outside [2, 254]).
 */
export function int8Reads(weight: WeightParts): boolean {
  return weight.dtype === 4 && weight.int8Exponents >= 0;
}

/** One matmul over rows [n0, n1) of a weight; offsets are bytes in the shared memory (-1: elsewhere). */
export interface MatmulRange {
  readonly x: Float32Array;
  readonly xOffset: number;
  /**
   * Byte offset of the same input in pairs (matmul/tile-module.ts) in the shared memory, which a
   * row-quads weight's tile reads; absent or -1: put in pairs here when needed.
   */
  readonly xPairs?: number;
  readonly M: number;
  readonly K: number;
  readonly weight: WeightParts;
  /** Output [M, N], row-major. */
  readonly out: Float32Array;
  readonly outOffset: number;
  readonly N: number;
  readonly n0: number;
  readonly n1: number;
  /**
   * Byte offset in the shared memory of x quantized for the integer MXFP4 path (mxfp4-int8.ts's
   * layout), which the dispatch quantizes once for all its weights and threads (the pool, where
   * `int8Reads` holds for a weight); -1 where it has none, and MXFP4 weights then take the exact path.
   */
  readonly quantized: number;
  /**
   * Byte offset in the shared memory of the weights this thread multiplies after this range (row
   * quads read where they lie), which the tile's last call reads ahead; absent or -1: unknown.
   */
  readonly ahead?: number;
}

/** What a thread keeps between matmuls: decoding tables, a row scratch, its SIMD kernel instances. */
export interface MatmulThread {
  readonly tables: DecodeTables;
  /** At least 4K floats; grown here as needed. */
  scratch: Float32Array;
  readonly tile: SimdTile | null;
  /** The fused MXFP4 rows (null: MXFP4 weights are unpacked into f32 rows for the tile). */
  readonly mxfp4: Mxfp4Rows | null;
  /** The block-scaled FP8 rows' SIMD kernels (null, or absent: unpacked in JavaScript for the tile). */
  readonly fp8?: Fp8Rows | null;
  /** The integer MXFP4 path and its input quantization (absent or null: not chosen). */
  readonly mxfp4Int8?: { readonly rows: Mxfp4Int8; readonly quantize: Int8Quantize } | null;
}

/** matmul/mxfp4-rows.wat's mxfp4 (see there for the arguments). */
export type Mxfp4InLoop = (
  K: number,
  M: number,
  x: number,
  blocks: number,
  scales: number,
  tables: number,
  acc: number,
  o: number,
  N: number,
  ldo: number,
) => void;

/** matmul/mxfp4-decode.wat's decode. */
export type Mxfp4Decode = (
  blocks: number,
  scales: number,
  tables: number,
  out: number,
  count: number,
) => void;

/**
 * matmul/mxfp4-rows.wat's form that decodes into the multiply-adds and matmul/mxfp4-decode.wat's
 * decode into scratch, each also as its `.halves` build for codes in halves order; the byte offset
 * of their tables (mxfp4Tables); and from how many input rows a matmul decodes a chunk of rows into
 * scratch for the tile instead of decoding inside the loop.
 */
export interface Mxfp4Rows {
  rows: Mxfp4InLoop;
  rowsHalves: Mxfp4InLoop;
  decode: Mxfp4Decode;
  decodeHalves: Mxfp4Decode;
  readonly halfScales: number;
  readonly scratchTokens: number;
}

/**
 * matmulRange on the integer MXFP4 path (mxfp4-int8.wat): the whole range in one call where the
 * output lies in the shared memory (the kernel reads the next rows ahead across it); else as many
 * rows as the scratch region's rows and out areas hold, an [M, span] matrix, at a time, each
 * copied into `out`.
 */
function int8Range(range: MatmulRange, simd: SimdTile, int8: NonNullable<MatmulThread["mxfp4Int8"]>): void {
  const { M, K, out, outOffset, N, n0, n1, quantized } = range;
  const { offset: wOffset, int8Exponents, halves } = range.weight;
  // The input's form for the weight's code order (mxfp4-int8.ts: the halves form after the OCP one).
  const q = quantized + (halves ? quantizedFormBytes(M, K) : 0);
  const direct = outOffset >= 0;
  const W = (simd.base >> 2) + M * K;
  const span = direct ? n1 - n0 : Math.floor((TILE_CHUNK * K + TILE_CHUNK * M) / M / 4) * 4;
  const heap = direct ? null : new Float32Array(simd.memory.buffer);
  for (let c0 = n0; c0 < n1; c0 += span) {
    const rows = Math.min(span, n1 - c0);
    const wAt = wOffset + (c0 * K) / 2;
    const at = direct ? outOffset + c0 * 4 : W * 4;
    const eAt = int8Exponents + c0;
    int8.rows(K, M, q, wAt, eAt, int8ExponentStride(N), at, rows, direct ? N * 4 : rows * 4);
    if (heap !== null)
      for (let m = 0; m < M; m++) out.set(heap.subarray(W + m * rows, W + (m + 1) * rows), m * N + c0);
  }
}

/**
 * Dequantizes row n of the range's [N, K] weight into rows[at, at + K) (f32: gathers it from row
 * quads); `bits` views rows' memory as u32 (bf16 rows are written as bits).
 */
function unpackRow(
  range: MatmulRange,
  tables: DecodeTables,
  n: number,
  rows: Float32Array,
  bits: Uint32Array,
  at: number,
): void {
  const { N, K } = range;
  const {
    dtype,
    data: wData,
    scaleData,
    scaleBlockRows,
    scaleBlockCols,
    mxScales,
    halves,
    fp8Order,
  } = range.weight;
  if (dtype === 0) quadRow(wData as Float32Array, 0, N, K, n, rows, at);
  else if (dtype === 1) {
    const src = wData as Uint16Array;
    const base = n * K;
    for (let k = 0; k < K; k++) bits[at + k] = (src[base + k] as number) << 16;
  } else if (dtype === 2) {
    const src = wData as Uint16Array;
    const lut = tables.f16;
    const base = n * K;
    for (let k = 0; k < K; k++) rows[at + k] = lut[src[base + k] as number] as number;
  } else if (dtype === 3) {
    const src = wData as Uint8Array;
    const lut = tables.fp8;
    const base = n * K;
    // File order: code k in byte k; lanes order (rows of whole groups of 16): in lanesIndex(k);
    // quads order: where quadsIndex puts it.
    const code =
      fp8Order === "lanes"
        ? (k: number) => src[base + lanesIndex(k)] as number
        : fp8Order === "quads"
          ? (k: number) => src[quadsIndex(base + k, K)] as number
          : (k: number) => src[base + k] as number;
    if (scaleData === null) {
      for (let k = 0; k < K; k++) rows[at + k] = lut[code(k)] as number;
    } else {
      const blocksPerRow = Math.ceil(K / scaleBlockCols);
      const sBase = Math.floor(n / scaleBlockRows) * blocksPerRow;
      for (let k0 = 0; k0 < K; k0 += scaleBlockCols) {
        const s = scaleData[sBase + Math.floor(k0 / scaleBlockCols)] as number;
        const k1 = Math.min(K, k0 + scaleBlockCols);
        for (let k = k0; k < k1; k++) rows[at + k] = (lut[code(k)] as number) * s;
      }
    }
  } else {
    const src = wData as Uint8Array;
    const scales = mxScales as Uint8Array;
    const lut = tables.fp4;
    const e8 = tables.e8m0;
    const byteBase = (n * K) >> 1;
    const scaleBase = (n * K) >> 5;
    // OCP order: byte j holds values 2j and 2j + 1; halves order: HALVES_ORDER[j] and 16 more.
    const lowAt = halves ? HALVES_ORDER : OCP_LOW;
    const high = halves ? 16 : 1;
    for (let blk = 0; blk < K >> 5; blk++) {
      const s = e8[scales[scaleBase + blk] as number] as number;
      const b0 = byteBase + blk * 16;
      const k0 = at + blk * 32;
      for (let j = 0; j < 16; j++) {
        const byte = src[b0 + j] as number;
        const i = k0 + (lowAt[j] as number);
        rows[i] = (lut[byte & 15] as number) * s;
        rows[i + high] = (lut[byte >> 4] as number) * s;
      }
    }
  }
}

/**
 * out[m*N + n] = sum_k x[m*K + k] * W[n][k] for every m < M and n0 <= n < n1.
 *
 * Weight rows are taken four at a time: narrow dtypes are dequantized into the thread's scratch
 * so they never exist in f32 beyond four rows, and each group of rows is dotted with two input rows
 * at once to share loads. Every output is one sequential sum over k in double precision, whatever
 * M, n0 and n1 are, so results do not depend on batch composition or on how rows are split between
 * threads, and equal the scalar reference's sum bit for bit.
 *
 * With the thread's SIMD tile (matmul/matmul-tile.wat) the sums run in four f32 lanes instead, each
 * step a fused multiply-add when the tile was built fused: still independent of batch and split,
 * but within f32 accumulation error of the reference (at most K·2^-24·Σ|x·w|, fused or not) rather
 * than equal to it.
 */
export function matmulRange(range: MatmulRange, thread: MatmulThread): void {
  // MXFP4 on integer dot products over the input the dispatch quantized (range.quantized).
  const int8 = range.quantized >= 0 && int8Reads(range.weight) ? (thread.mxfp4Int8 ?? null) : null;
  if (int8 !== null && thread.tile !== null) {
    int8Range(range, thread.tile, int8);
    return;
  }
  const { x, xOffset, M, K, out, outOffset, N, n0, n1 } = range;
  const { dtype, data: wData, offset: wOffset, halves, quads } = range.weight;
  const { tables, tile: simd } = thread;
  if (simd !== null && K % 4 === 0 && K > 0) {
    if (simd.bytes < tileRegionBytes(M, K)) {
      throw new RangeError(`matmul scratch of ${simd.bytes} bytes is too small for M=${M}, K=${K}`);
    }
    // WebAssembly SIMD path over this thread's scratch region (tileRegionBytes: [x: M*K][rows:
    // TILE_CHUNK*K][out: M*TILE_CHUNK] floats, then the quads tile's sums at accAt). Whatever
    // already lies in the shared memory is used where it lies: f32 weights, the input and the
    // output (the pool's staged arrays). Other weights are dequantized (or copied) into the rows
    // area TILE_CHUNK rows at a time; another input is copied in once.
    const heap = new Float32Array(simd.memory.buffer);
    const S = simd.base >> 2;
    const W = S + M * K;
    const O = W + TILE_CHUNK * K;
    const accAt = (O + TILE_CHUNK * M) * 4;
    // Row quads are read by the `quads` tile, whose inputs are in pairs (one row is its own pairs):
    // written into the x area, a row-major input outside the shared memory two rows at a time
    // through the rows area. Other weights' tile reads row-major inputs.
    let xAt = xOffset;
    if (quads && M > 1 && (range.xPairs ?? -1) >= 0) xAt = range.xPairs as number;
    else if (quads && M > 1) {
      if (xOffset >= 0) simd.pairs(K, M, xOffset, S * 4);
      else {
        for (let m = 0; m < M; m += 2) {
          const n = Math.min(2, M - m);
          heap.set(x.subarray(m * K, (m + n) * K), W);
          simd.pairs(K, n, W * 4, (S + m * K) * 4);
        }
      }
      xAt = S * 4;
    } else if (xAt < 0) {
      heap.set(x.subarray(0, M * K), S);
      xAt = S * 4;
    }
    const inPlace = dtype === 0 && wOffset >= 0;
    // Row quads read ahead (matmul-tile.wat): a call the next chunk's weights, the last range.ahead.
    const tile = (
      inputAt: number,
      weightsAt: number,
      outAt: number,
      G: number,
      ldo: number,
      ahead: number,
    ) =>
      quads
        ? simd.quads(K, M, inputAt, weightsAt, outAt, G, ldo, ahead, accAt)
        : simd.tile(K, M, inputAt, weightsAt, outAt, G, ldo);
    const { scalesOffset } = range.weight;
    const packed = dtype === 4 && wOffset >= 0 && scalesOffset >= 0 ? thread.mxfp4 : null;
    // FP8 with scale blocks of whole groups of 32 values is decoded by matmul/fp8-rows.wat, the
    // build for the weight's code order (fp8Step).
    const fp8 =
      dtype === 3 && wOffset >= 0 && scalesOffset >= 0 && thread.fp8
        ? fp8Step(thread.fp8, range.weight, K, M, n0, n1, N)
        : null;
    // Below a switch's scratchTokens input rows, FP8 and MXFP4 rows are decoded straight into the
    // multiply-adds (matmul/fp8-rows.wat's fp8, matmul/mxfp4-rows.wat): the tile's operations on
    // the unpacked rows, so the same bits. Their scratch is the rows area's first 128 bytes, their
    // output the output where it lies in the shared memory, else the rest of the rows and out
    // areas (at least TILE_CHUNK - 1 rows), an [M, rows] matrix; a call takes as many rows as that
    // holds, not TILE_CHUNK (the kernels read each next group of rows ahead within a call: 16
    // random experts [2048, 1024] whole ran 1.07x [1.01, 1.14] and 1.04x [1.00, 1.08] their speed
    // 64 rows a call).
    const fp8InLoop = fp8?.inLoop ?? null;
    const mxfp4InLoop = packed !== null && M < packed.scratchTokens ? packed : null;
    if (fp8InLoop !== null || mxfp4InLoop !== null) {
      const direct = outOffset >= 0;
      // (After fp8=scaled's input, when it runs.)
      const area = W + 32 + (fp8?.inputBytes ?? 0) / 4;
      // (Whole groups of four rows a call, as FP8 codes in quads order need.)
      const most = direct ? n1 - n0 : Math.floor((TILE_CHUNK * (K + M) + W - area) / M / 4) * 4;
      for (let c0 = n0; c0 < n1; c0 += most) {
        const rows = Math.min(most, n1 - c0);
        const [at, ldo] = direct ? [outOffset + c0 * 4, N * 4] : [area * 4, rows * 4];
        if (fp8InLoop !== null) fp8InLoop(M, xAt, c0, W * 4, at, rows, ldo);
        else if (mxfp4InLoop !== null) {
          const inLoop = halves ? mxfp4InLoop.rowsHalves : mxfp4InLoop.rows;
          const [wAt, sAt] = [wOffset + (c0 * K) / 2, scalesOffset + (c0 * K) / 32];
          inLoop(K, M, xAt, wAt, sAt, mxfp4InLoop.halfScales, W * 4, at, rows, ldo);
        }
        if (!direct)
          for (let m = 0; m < M; m++)
            out.set(heap.subarray(area + m * rows, area + (m + 1) * rows), m * N + c0);
      }
      return;
    }
    for (let c0 = n0; c0 < n1; c0 += TILE_CHUNK) {
      const rows = Math.min(TILE_CHUNK, n1 - c0);
      const whole = rows >> 2;
      const groups = Math.ceil(rows / 4);
      // Whole groups of four columns go straight into an output in the shared memory; the others
      // (and a ragged group, which would write past this range) go to the out area, an
      // [M, TILE_CHUNK] matrix, and from there into `out` row by row.
      const direct = outOffset >= 0 ? whole : 0;
      // Whole groups of rows straight from the weights (in row quads, groups of the layout's own:
      // from a multiple of 4, before its ragged rows); other rows go through the rows area,
      // zero-padded so the tile never reads past the weight, laid out as the weight's.
      const aligned = quads ? (c0 % 4 === 0 ? Math.max(0, (quadRows(N) - c0) >> 2) : 0) : whole;
      const fromWeights = inPlace ? Math.min(whole, aligned) : 0;
      // These are whole groups: all into the output where it lies in the shared memory, else all
      // into the out area.
      const wAt = wOffset + c0 * K * 4;
      const ahead = c0 + TILE_CHUNK < n1 ? wAt + TILE_CHUNK * K * 4 : (range.ahead ?? -1);
      if (fromWeights > 0 && direct > 0) tile(xAt, wAt, outOffset + c0 * 4, fromWeights, N * 4, ahead);
      else if (fromWeights > 0) tile(xAt, wAt, O * 4, fromWeights, TILE_CHUNK * 4, ahead);
      if (fromWeights < groups) {
        const r0 = fromWeights * 4;
        if (dtype === 0 && !quads)
          heap.set((wData as Float32Array).subarray((c0 + r0) * K, (c0 + rows) * K), W);
        else if (packed !== null) {
          // The chunk's MXFP4 rows decoded once (the fused kernel's exact values, so the same
          // bits), then the tile over them.
          const blocks = ((rows - r0) * K) / 32;
          const first = ((c0 + r0) * K) / 32;
          const decode = halves ? packed.decodeHalves : packed.decode;
          decode(wOffset + first * 16, scalesOffset + first, packed.halfScales, W * 4, blocks);
        } else if (fp8 !== null) {
          // The chunk's FP8 rows decoded once (the table decoding's exact values), then the tile.
          fp8.decode(c0, W * 4, rows);
        } else {
          const bits = new Uint32Array(heap.buffer);
          for (let j = r0; j < rows; j++) unpackRow(range, tables, c0 + j, heap, bits, W + (j - r0) * K);
        }
        if (rows < groups * 4) heap.fill(0, W + (rows - r0) * K, W + (groups * 4 - r0) * K);
        if (quads) toRowQuads(heap.subarray(W, W + (groups * 4 - r0) * K), groups * 4 - r0, K);
        // Groups [fromWeights, split) into the output, [split, groups) into the out area.
        const split = Math.max(fromWeights, direct);
        const o0 = outOffset + (c0 + 4 * fromWeights) * 4;
        if (split > fromWeights) tile(xAt, W * 4, o0, split - fromWeights, N * 4, -1);
        const w1 = (W + (split - fromWeights) * 4 * K) * 4;
        if (groups > split) tile(xAt, w1, (O + 4 * split) * 4, groups - split, TILE_CHUNK * 4, -1);
      }
      const first = direct * 4;
      if (first < rows) {
        for (let m = 0; m < M; m++) {
          const from = O + m * TILE_CHUNK;
          out.set(heap.subarray(from + first, from + rows), m * N + c0 + first);
        }
      }
    }
    return;
  }
  // Row-major f32 rows are read where they lie; row quads are gathered row by row like narrow rows.
  if (thread.scratch.length < 4 * K) thread.scratch = new Float32Array(4 * K);
  const scratch = thread.scratch;
  const scratchBits = new Uint32Array(scratch.buffer, scratch.byteOffset, scratch.length);
  const f32 = dtype === 0 && !quads;
  const w: Float32Array = f32 ? (wData as Float32Array) : scratch;
  let n = n0;
  for (; n + 4 <= n1; n += 4) {
    let r0 = n * K;
    if (!f32) {
      for (let j = 0; j < 4; j++) unpackRow(range, tables, n + j, scratch, scratchBits, j * K);
      r0 = 0;
    }
    const r1 = r0 + K;
    const r2 = r1 + K;
    const r3 = r2 + K;
    let m = 0;
    for (; m + 2 <= M; m += 2) {
      const xa = m * K;
      const xb = xa + K;
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      let a3 = 0;
      let b0 = 0;
      let b1 = 0;
      let b2 = 0;
      let b3 = 0;
      for (let k = 0; k < K; k++) {
        const u = x[xa + k] as number;
        const v = x[xb + k] as number;
        const w0 = w[r0 + k] as number;
        const w1 = w[r1 + k] as number;
        const w2 = w[r2 + k] as number;
        const w3 = w[r3 + k] as number;
        a0 += u * w0;
        a1 += u * w1;
        a2 += u * w2;
        a3 += u * w3;
        b0 += v * w0;
        b1 += v * w1;
        b2 += v * w2;
        b3 += v * w3;
      }
      const oa = m * N + n;
      const ob = oa + N;
      out[oa] = a0;
      out[oa + 1] = a1;
      out[oa + 2] = a2;
      out[oa + 3] = a3;
      out[ob] = b0;
      out[ob + 1] = b1;
      out[ob + 2] = b2;
      out[ob + 3] = b3;
    }
    if (m < M) {
      const xa = m * K;
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      let a3 = 0;
      for (let k = 0; k < K; k++) {
        const u = x[xa + k] as number;
        a0 += u * (w[r0 + k] as number);
        a1 += u * (w[r1 + k] as number);
        a2 += u * (w[r2 + k] as number);
        a3 += u * (w[r3 + k] as number);
      }
      const oa = m * N + n;
      out[oa] = a0;
      out[oa + 1] = a1;
      out[oa + 2] = a2;
      out[oa + 3] = a3;
    }
  }
  for (; n < n1; n++) {
    let r0 = n * K;
    if (!f32) {
      unpackRow(range, tables, n, scratch, scratchBits, 0);
      r0 = 0;
    }
    for (let m = 0; m < M; m++) {
      const xa = m * K;
      let a0 = 0;
      for (let k = 0; k < K; k++) a0 += (x[xa + k] as number) * (w[r0 + k] as number);
      out[m * N + n] = a0;
    }
  }
}
