/**
 * WebAssembly SIMD decoders from MXFP4 and scaled FP8 E4M3 to float32, for reading and verifying
 * weights: the scalar loops run at 5-8 ns an element here, which made proving a converted
 * checkpoint exact take several times longer than converting it.
 *
 * Both produce exactly what the scalar decoders do. Each element is a product of two float32
 * values (an element and its block's scale) that float64 holds exactly, so the scalar path's one
 * rounding to float32 is the one f32x4.mul makes. MXFP4: a nibble's float32 bits have only their top
 * two bytes set, which two 16-entry swizzle tables give (built from the E2M1 decode table).
 * E4M3: a normal code's low 7 bits shifted into a float32's exponent and mantissa, plus the exponent
 * bias difference, are its float32 bits; a subnormal's mantissa times 2^-9 is its value (so no
 * element is a float32 subnormal operand, only a rare tiny scale can be: x86 takes a slow microcode
 * path on those, which made a first version of this decoder 2.6x slower here);
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
  wasmApi,
  wasmModuleBytes,
  whileBelow,
} from "../common/wasm-assembler.js";
import { e8m0Table } from "./e8m0.js";
import { decodeTable, FP4_E2M1 } from "./minifloat.js";

const LOAD8_U = [0x2d, 0x00, 0x00];
const F32_LOAD = [0x2a, 0x02, 0x00];
const F32X4_SPLAT = simd(0x13);
const I32X4_SPLAT = simd(0x11);
const V_AND = simd(0x4e);
const V_OR = simd(0x50);
const I16X8_SHR_U = simd(0x8d);
const I32X4_EQ = simd(0x37);
const I32X4_SHL = simd(0xab);
const I32X4_ADD = simd(0xae);
const I32X4_LT_U = simd(0x3a);
const V_BITSELECT = simd(0x52);
const F32X4_CONVERT_I32X4_S = simd(0xfa);
const EXTEND_8_TO_16 = [simd(0x89), simd(0x8a)]; // i16x8.extend_{low,high}_i8x16_u
const EXTEND_16_TO_32 = [simd(0xa9), simd(0xaa)]; // i32x4.extend_{low,high}_i16x8_u
const shuffle = (lanes: number[]) => simd(0x0d, ...lanes);
const v128Const = (bytes: ArrayLike<number>) => simd(0x0c, ...Array.from(bytes));
const splatI32 = (value: number) => [...i32(value), ...I32X4_SPLAT];

/** Bytes i of a and i of b, alternately, from lane `from` on: interleaves two byte vectors. */
const interleave8 = (from: number) => Array.from({ length: 16 }, (_, i) => from + (i >> 1) + (i & 1) * 16);
/** Each 16-bit lane of b, from lane `from` on, as the top half of a 32-bit lane (a's lanes are zero). */
const widenHigh16 = (from: number) =>
  Array.from({ length: 16 }, (_, i) => ((i & 3) < 2 ? i & 1 : 16 + 2 * (from + (i >> 2)) + (i & 1)));

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
      ...[0, 1].flatMap((r) => [
        ...get(2),
        ...get(9),
        ...get(17),
        ...shuffle(widenHigh16(4 * r)),
        ...get(10),
        ...F32X4_MUL,
        ...v128Store(0, 64 * h + 32 * q + 16 * r),
      ]),
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

/**
 * fp8(codes, out, count, blockCols, scales): `count` E4M3 codes to float32, the k-th run of
 * `blockCols` times the float32 at scales + 4k. count and blockCols are multiples of 16.
 */
function fp8Body(): number[] {
  // params 0 codes, 1 out, 2 count, 3 blockCols, 4 scales | locals 5 c, 6 runEnd
  // | 7 factor, 8 x, 9 wide, 10 code, 11 magnitude, 12 value
  // Float32 bits of 2^-9 and of the exponent bias difference (127 - 7) in place.
  const [M7F, M80, NAN_BITS, TWO_TO_MINUS_9, REBIAS] = [0x7f, 0x80, 0x7fc00000, 0x3b000000, 120 << 23];
  const decode4 = (slot: number) => [
    ...[...get(10), ...splatI32(M7F), ...V_AND, ...set(11)],
    // subnormal (exponent 0): m * 2^-9; bitselect's mask is its third operand
    ...[...get(11), ...F32X4_CONVERT_I32X4_S, ...splatI32(TWO_TO_MINUS_9), ...F32X4_MUL],
    ...[...get(11), ...i32(20), ...I32X4_SHL, ...splatI32(REBIAS), ...I32X4_ADD],
    ...[...get(11), ...splatI32(8), ...I32X4_LT_U, ...V_BITSELECT],
    ...[...get(10), ...splatI32(M80), ...V_AND, ...i32(24), ...I32X4_SHL, ...V_OR],
    ...[...get(11), ...splatI32(M7F), ...I32X4_EQ, ...splatI32(NAN_BITS), ...V_AND, ...V_OR],
    ...[...get(7), ...F32X4_MUL, ...set(12)],
    ...[...get(1), ...get(12), ...v128Store(0, 16 * slot)],
  ];
  const sixteen = [
    ...[...get(0), ...v128Load(0, 0), ...set(8)],
    ...[0, 1].flatMap((h) => [
      ...[...get(8), ...(EXTEND_8_TO_16[h] as number[]), ...set(9)],
      ...[0, 1].flatMap((q) => [
        ...get(9),
        ...(EXTEND_16_TO_32[q] as number[]),
        ...set(10),
        ...decode4(2 * h + q),
      ]),
    ]),
    ...addTo(0, 16),
    ...addTo(1, 64),
  ];
  return [
    ...locals([2, I32], [6, V128]),
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
  return wasmModuleBytes({
    types: [funcType([I32, I32, I32, I32, I32], [])],
    functions: [
      { type: 0, body: mxfp4Body(relaxed ? simd(0x100) : simd(0x0e)) },
      { type: 0, body: fp8Body() },
    ],
    exports: [
      ["mxfp4", 0],
      ["fp8", 1],
    ],
    sharedMemory: false,
  });
}

/** An unshared memory that grows (its buffer is replaced when it does). */
interface WasmGrowableMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
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
  readonly #memory: WasmGrowableMemory;

  private constructor(
    module: WasmModule,
    /** Whether the MXFP4 lookups use relaxed SIMD's swizzle. */
    readonly relaxed: boolean,
  ) {
    this.#memory = new (wasmApi as WasmApi).Memory({ initial: 1, maximum: 65536 }) as WasmGrowableMemory;
    this.#kernel = instantiateWasm(module, this.#memory) as DecodeExports;
    new Float32Array(this.#memory.buffer, FACTORS, 256).set(e8m0Table());
  }

  /**
   * A decoder, or undefined where WebAssembly SIMD is unavailable. It uses relaxed SIMD's swizzle
   * (alike for the indices under 16 used here, without a range fix-up) where the runtime has it,
   * unless `relaxed` is false.
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
