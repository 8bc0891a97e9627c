/**
 * WebAssembly SIMD decoders from MXFP4 and scaled FP8 E4M3 to float32, for reading and verifying
 * weights: the scalar loops run at 5-8 ns an element here, which made proving a converted
 * checkpoint exact take several times longer than converting it.
 *
 * Both produce exactly what the scalar decoders do. Each element is a product of two float32
 * values (an element and its block's scale) that float64 holds exactly, so the scalar path's one
 * rounding to float32 is the one f32x4.mul makes. MXFP4: a nibble's float32 bits have only their top
 * two bytes set, which two 16-entry swizzle tables give (built from the E2M1 decode table).
 * E4M3: a value also has only the top 16 bits of its float32 set; for a normal code they are its
 * low 7 bits shifted under the sign plus the exponent bias difference, for a subnormal they come
 * from a table. No element is a float32 subnormal operand, only a rare tiny scale can be: x86 takes
 * a slow microcode path on those, which made a first version of this decoder 2.6x slower here.
 * 0x7f and 0xff become NaN.
 *
 * Bytes are read into a decoder's memory and decoded there (DecodeSpace), or copied through it a
 * slice at a time.
 */

import {
  addTo,
  brIf,
  compileWasm,
  F32X4_MUL,
  funcType,
  localGet as get,
  I32,
  I32_ADD,
  I32_GE_U,
  I32_LT_U,
  I32_SHL,
  i8x16Swizzle,
  i32Const as i32,
  instantiateWasm,
  locals,
  relaxedSimdAvailable,
  SELECT,
  localSet as set,
  simd,
  V128,
  v128Load,
  v128Store,
  type WasmApi,
  type WasmModule,
  type WasmUnsharedMemory,
  wasmApi,
  wasmModuleBytes,
  whileBelow,
} from "../common/wasm-assembler.js";
import { e8m0Table } from "./e8m0.js";
import { decodeTable, FP4_E2M1, FP8_E4M3FN } from "./minifloat.js";

const LOAD8_U = [0x2d, 0x00, 0x00];
const F32_LOAD = [0x2a, 0x02, 0x00];
const F32X4_SPLAT = simd(0x13);
const V_AND = simd(0x4e);
const V_OR = simd(0x50);
const I16X8_SHR_U = simd(0x8d);
const I16X8_SPLAT = simd(0x10);
const I16X8_EQ = simd(0x2d);
const I16X8_LT_U = simd(0x30);
const I16X8_SHL = simd(0x8b);
const I16X8_ADD = simd(0x8e);
const I16X8_MUL = simd(0x95);
const V_BITSELECT = simd(0x52);
const EXTEND_8_TO_16 = [simd(0x89), simd(0x8a)]; // i16x8.extend_{low,high}_i8x16_u
const shuffle = (lanes: number[]) => simd(0x0d, ...lanes);
const v128Const = (bytes: ArrayLike<number>) => simd(0x0c, ...Array.from(bytes));

/** Bytes i of a and i of b, alternately, from lane `from` on: interleaves two byte vectors. */
const interleave8 = (from: number) => Array.from({ length: 16 }, (_, i) => from + (i >> 1) + (i & 1) * 16);
/** Each 16-bit lane of b, from lane `from` on, as the top half of a 32-bit lane (a's lanes are zero). */
const widenHigh16 = (from: number) =>
  Array.from({ length: 16 }, (_, i) => ((i & 3) < 2 ? i & 1 : 16 + 2 * (from + (i >> 2)) + (i & 1)));

/**
 * Stores at i32 local `out` + `offset` eight float32 whose top halves are the 16-bit lanes of v128
 * local `top` (`zero`: a v128 local of zeros), each times v128 local `factor`.
 */
const storeScaled8 = (out: number, zero: number, top: number, factor: number, offset: number) =>
  [0, 1].flatMap((r) => [
    ...get(out),
    ...get(zero),
    ...get(top),
    ...shuffle(widenHigh16(4 * r)),
    ...get(factor),
    ...F32X4_MUL,
    ...v128Store(0, offset + 16 * r),
  ]);

/** Top two bytes of the float32 bits of every E2M1 code, as two swizzle tables. */
function e2m1Tables(): { high: Uint8Array; low: Uint8Array } {
  const bits = new Uint32Array(Float32Array.from(decodeTable(FP4_E2M1)).buffer);
  return {
    high: Uint8Array.from(bits, (b) => b >>> 24),
    low: Uint8Array.from(bits, (b) => (b >>> 16) & 0xff),
  };
}

/**
 * mxfp4(blocks, scales, out, n, factors): n blocks of 16 bytes to 32 float32 each, times the
 * block's scale, looked up as float32 in the 256-entry table at `factors`.
 */
function mxfp4Body(swizzle: number[]): number[] {
  // params 0 blocks, 1 scales, 2 out, 3 n, 4 factors | locals 5 i | 6 mask, 7 high, 8 low, 9 zero,
  // 10 factor, 11 v, 12 lo, 13 hi, 14 codes, 15 top, 16 next, 17 pair
  const tables = e2m1Tables();
  const half = (h: number) => [
    ...get(12),
    ...get(13),
    ...shuffle(interleave8(8 * h)),
    ...set(14), // element codes 16h .. 16h + 15, in order
    ...[...get(7), ...get(14), ...swizzle, ...set(15)],
    ...[...get(8), ...get(14), ...swizzle, ...set(16)],
    ...[0, 1].flatMap((q) => [
      ...[...get(16), ...get(15), ...shuffle(interleave8(8 * q)), ...set(17)], // 8 elements' top halves
      ...storeScaled8(2, 9, 17, 10, 64 * h + 32 * q),
    ]),
  ];
  return [
    ...locals([1, I32], [12, V128]),
    ...[...v128Const(new Array<number>(16).fill(0x0f)), ...set(6)],
    ...[...v128Const(tables.high), ...set(7)],
    ...[...v128Const(tables.low), ...set(8)],
    ...[...v128Const(new Array<number>(16).fill(0)), ...set(9)],
    ...[...i32(0), ...set(5)],
    ...whileBelow(5, 3, 1, [
      ...[
        ...get(4),
        ...get(1),
        ...LOAD8_U,
        ...i32(2),
        ...I32_SHL,
        ...I32_ADD,
        ...F32_LOAD,
        ...F32X4_SPLAT,
        ...set(10),
      ],
      ...[...get(0), ...v128Load(0, 0), ...set(11)],
      ...[...get(11), ...get(6), ...V_AND, ...set(12)],
      ...[...get(11), ...i32(4), ...I16X8_SHR_U, ...get(6), ...V_AND, ...set(13)],
      ...half(0),
      ...half(1),
      ...addTo(0, 16),
      ...addTo(1, 1),
      ...addTo(2, 128),
    ]),
    0x0b,
  ];
}

/** The top 16 bits of the float32 of each E4M3 subnormal magnitude 0-7, as a 16-byte swizzle table. */
function e4m3SubnormalTable(): Uint8Array {
  const bits = new Uint32Array(Float32Array.from(decodeTable(FP8_E4M3FN).subarray(0, 8)).buffer);
  return new Uint8Array(Uint16Array.from(bits, (b) => b >>> 16).buffer);
}

/**
 * fp8(codes, out, count, blockCols, scales): `count` E4M3 codes to float32, the k-th run of
 * `blockCols` times the float32 at scales + 4k. count and blockCols are multiples of 16. Works on
 * the top 16 bits of each float32 (all an E4M3 value has), eight codes a vector.
 */
function fp8Body(swizzle: number[]): number[] {
  // params 0 codes, 1 out, 2 count, 3 blockCols, 4 scales | locals 5 c, 6 runEnd
  // | 7 factor, 8 x, 9 wide, 10 magnitude, 11 top, 12 zero, 13 subnormals
  // A normal magnitude's bits shifted under a float32's sign, plus the exponent bias difference
  // (127 - 7), are its float32's top 16 bits; a subnormal's come from a table, indexed by byte pairs
  // 2m, 2m + 1 (m * 0x202 + 0x100), which also keeps float32 subnormals out of every operand.
  const splat16 = (value: number) => [...i32(value), ...I16X8_SPLAT];
  const decode8 = (h: number) => [
    ...[...get(8), ...(EXTEND_8_TO_16[h] as number[]), ...set(9)],
    ...[...get(9), ...splat16(0x7f), ...V_AND, ...set(10)],
    ...[...get(13), ...get(10), ...splat16(0x202), ...I16X8_MUL, ...splat16(0x100), ...I16X8_ADD, ...swizzle],
    ...[...get(10), ...i32(4), ...I16X8_SHL, ...splat16(120 << 7), ...I16X8_ADD],
    ...[...get(10), ...splat16(8), ...I16X8_LT_U, ...V_BITSELECT],
    ...[...get(9), ...splat16(0x80), ...V_AND, ...i32(8), ...I16X8_SHL, ...V_OR],
    ...[...get(10), ...splat16(0x7f), ...I16X8_EQ, ...splat16(0x7fc0), ...V_AND, ...V_OR, ...set(11)],
    ...storeScaled8(1, 12, 11, 7, 32 * h),
  ];
  const sixteen = [
    ...[...get(0), ...v128Load(0, 0), ...set(8)],
    ...decode8(0),
    ...decode8(1),
    ...addTo(0, 16),
    ...addTo(1, 64),
  ];
  return [
    ...locals([2, I32], [7, V128]),
    ...[...v128Const(new Array<number>(16).fill(0)), ...set(12)],
    ...[...v128Const(e4m3SubnormalTable()), ...set(13)],
    ...[...i32(0), ...set(5)],
    ...[0x02, 0x40, 0x03, 0x40],
    ...[...get(5), ...get(2), ...I32_GE_U, ...brIf(1)],
    ...[...get(4), ...F32_LOAD, ...F32X4_SPLAT, ...set(7)],
    ...addTo(4, 4),
    // runEnd = min(c + blockCols, count)
    ...[
      ...get(5),
      ...get(3),
      ...I32_ADD,
      ...get(2),
      ...get(5),
      ...get(3),
      ...I32_ADD,
      ...get(2),
      ...I32_LT_U,
    ],
    ...[...SELECT, ...set(6)],
    ...whileBelow(5, 6, 16, sixteen),
    ...[0x0c, 0x00, 0x0b, 0x0b],
    0x0b,
  ];
}

export function decodeModuleBytes(relaxed: boolean): Uint8Array {
  const swizzle = i8x16Swizzle(relaxed);
  return wasmModuleBytes({
    types: [funcType([I32, I32, I32, I32, I32], [])],
    functions: [
      { type: 0, body: mxfp4Body(swizzle) },
      { type: 0, body: fp8Body(swizzle) },
    ],
    exports: [
      ["mxfp4", 0],
      ["fp8", 1],
    ],
    sharedMemory: false,
  });
}

interface DecodeExports {
  mxfp4(blocks: number, scales: number, out: number, n: number, factors: number): void;
  fp8(codes: number, out: number, count: number, blockCols: number, scales: number): void;
}

/** Elements dequantizeMxfp4 decodes per kernel call, copying through: the slice stays in cache. */
const SLICE = 32 * 1024;
const PAGE = 65536;
const ALIGN = 64;
const FACTORS = 0;
const roundUp = (n: number) => Math.ceil(n / ALIGN) * ALIGN;

const modules = new Map<boolean, WasmModule | null>();

function decodeModule(relaxed: boolean): WasmModule | null {
  if (!modules.has(relaxed)) modules.set(relaxed, compileWasm(decodeModuleBytes(relaxed)) ?? null);
  return modules.get(relaxed) ?? null;
}

/**
 * Views of a decoder's memory to read quantized bytes into and decode them in place, valid until
 * the decoder's next `space`: `scales` (MXFP4's E8M0 codes, or FP8's float32 scales as stored),
 * `codes` (MXFP4 blocks or FP8 codes) and `values`.
 */
export interface DecodeSpace {
  readonly scales: Uint8Array;
  readonly codes: Uint8Array;
  readonly values: Float32Array;
  /** The first `blocks` MXFP4 blocks in `codes`, under the scales in `scales`, into `values`. */
  mxfp4(blocks: number): void;
  /**
   * One row of `cols` FP8 codes from element `at` of `codes` into the same place in `values`, the
   * k-th run of `blockCols` times float32 number `scale + k` of `scales`. See fp8Fits.
   */
  fp8Row(at: number, cols: number, blockCols: number, scale: number): void;
}

/**
 * A decoder and its memory (not shared: copies in and out of a shared one go element by element,
 * and took longer than decoding). Layout: the E8M0 factors (256 float32), then the scales, codes
 * and values areas, grown as asked.
 */
export class SimdDecoder {
  readonly #kernel: DecodeExports;
  readonly #memory: WasmUnsharedMemory;

  private constructor(
    module: WasmModule,
    /** Whether the MXFP4 lookups use relaxed SIMD's swizzle. */
    readonly relaxed: boolean,
  ) {
    this.#memory = new (wasmApi as WasmApi).Memory({ initial: 1, maximum: 65536 });
    this.#kernel = instantiateWasm(module, this.#memory) as DecodeExports;
    new Float32Array(this.#memory.buffer, FACTORS, 256).set(e8m0Table());
  }

  /**
   * A decoder, or undefined where WebAssembly SIMD is unavailable. It uses relaxed SIMD's swizzle
   * (without the plain one's range fix-up; it differs only for indices of 16 and up, which the
   * MXFP4 lookups never use and the FP8 one discards) where the runtime has it, unless `relaxed` is
   * false.
   */
  static create(relaxed = true): SimdDecoder | undefined {
    const useRelaxed = relaxed && relaxedSimdAvailable();
    const module = decodeModule(useRelaxed);
    return module === null ? undefined : new SimdDecoder(module, useRelaxed);
  }

  /** Room for `scaleBytes`, `codeBytes` and `values` floats; earlier views of the memory may go stale. */
  space(scaleBytes: number, codeBytes: number, values: number): DecodeSpace {
    const scalesAt = roundUp(FACTORS + 1024);
    const codesAt = roundUp(scalesAt + scaleBytes);
    const valuesAt = roundUp(codesAt + codeBytes);
    const top = valuesAt + 4 * values;
    const length = this.#memory.buffer.byteLength;
    if (top > length) this.#memory.grow(Math.ceil((top - length) / PAGE));
    const buffer = this.#memory.buffer;
    return {
      scales: new Uint8Array(buffer, scalesAt, scaleBytes),
      codes: new Uint8Array(buffer, codesAt, codeBytes),
      values: new Float32Array(buffer, valuesAt, values),
      mxfp4: (blocks) => this.#kernel.mxfp4(codesAt, scalesAt, valuesAt, blocks, FACTORS),
      fp8Row: (at, cols, blockCols, scale) =>
        this.#kernel.fp8(codesAt + at, valuesAt + 4 * at, cols, blockCols, scalesAt + 4 * scale),
    };
  }

  /** MXFP4 blocks (16 bytes each) and their scales to float32 in `out`, 32 per block. */
  mxfp4(blocks: Uint8Array, scales: Uint8Array, out: Float32Array): void {
    const step = SLICE / 32;
    const space = this.space(step, step * 16, SLICE);
    for (let b0 = 0; b0 < scales.length; b0 += step) {
      const n = Math.min(step, scales.length - b0);
      space.codes.set(blocks.subarray(b0 * 16, (b0 + n) * 16));
      space.scales.set(scales.subarray(b0, b0 + n));
      space.mxfp4(n);
      out.set(space.values.subarray(0, n * 32), b0 * 32);
    }
  }
}

/** Whether rows of `cols` codes in runs of `blockCols` suit DecodeSpace.fp8Row. */
export function fp8Fits(cols: number, blockCols: number): boolean {
  return cols % 16 === 0 && blockCols % 16 === 0;
}

let threadDecoder: SimdDecoder | null | undefined;

/** This thread's decoder for dequantizeMxfp4, or undefined where WebAssembly SIMD is unavailable. */
export function simdDecoder(): SimdDecoder | undefined {
  threadDecoder ??= SimdDecoder.create() ?? null;
  return threadDecoder ?? undefined;
}
