/**
 * A WebAssembly SIMD kernel for MXFP4 to FP8 E4M3, and the shared memory it works in.
 *
 * One MXFP4 block is 16 bytes, exactly one v128: its low and high nibbles index a 16-byte table
 * of E4M3 codes (i8x16.swizzle) and two shuffles interleave them into the 32 output codes, low
 * nibble first. Each shift d in [-8, 9] (value = e2m1 * 2^d) has its own table; the tables are
 * the plain path's exact codes (`shiftedE4m3`), so the two paths agree by construction and the
 * tests compare them bit for bit. Blocks needing a shift below -8 are only counted here: the
 * caller redoes their band on the plain path, which names what is inexact.
 *
 * Assembled here from its opcodes with the shared pieces of common/wasm-assembler.ts.
 */

import {
  brIf,
  compileWasm,
  funcType,
  localGet as get,
  I32,
  I32_ADD,
  I32_EQ,
  I32_GE_U,
  I32_GT_S,
  I32_LT_S,
  I32_SHL,
  I32_SHR_U,
  I32_SUB,
  i32Const as i32,
  instantiateWasm,
  locals,
  SELECT,
  localSet as set,
  simd,
  localTee as tee,
  V128,
  v128Load,
  v128Store,
  type WasmApi,
  type WasmModule,
  type WasmSharedMemory,
  wasmApi,
  wasmModuleBytes,
} from "../common/wasm-assembler.js";

/** Shift range the tables cover. */
export const SIMD_SHIFT_MIN = -8;
export const SIMD_SHIFT_MAX = 9;
/** Tile maxima start here; a tile still below TILE_EMPTY afterwards has only all-zero blocks. */
export const TILE_NONE = -1_000_000;
export const TILE_EMPTY = -1000;

const LOAD = [0x28, 0x02, 0x00];
const STORE = [0x36, 0x02, 0x00];
const LOAD8_U = [0x2d, 0x00, 0x00];
const V_LOAD = v128Load(0, 0);
const V_STORE = (offset: number) => v128Store(0, offset);
const V_SPLAT8 = (byte: number) => [...i32(byte), ...simd(0x0f)];
const SHUFFLE = (lanes: number[]) => simd(0x0d, ...lanes);
const SWIZZLE = simd(0x0e);
const V_AND = simd(0x4e);
const ANY_TRUE = simd(0x53);
const U8_SHR = simd(0x6d);
const I16_SHL = simd(0x8b);
const BLOCK_LOOP = [0x02, 0x40, 0x03, 0x40];
const END_LOOP = [0x0c, 0x00, 0x0b, 0x0b]; // br 0 (repeat); end loop; end block

const INTERLEAVE_LOW = Array.from({ length: 16 }, (_, i) => (i >> 1) + (i & 1) * 16);
const INTERLEAVE_HIGH = INTERLEAVE_LOW.map((lane) => lane + 8);

/** `g = g + 1 === groups ? 0 : g + 1` for local g and local groups. */
const nextGroup = (g: number, groups: number) => [
  ...get(g),
  ...i32(1),
  ...I32_ADD,
  ...set(g),
  ...i32(0),
  ...get(g),
  ...get(g),
  ...get(groups),
  ...I32_EQ,
  ...SELECT,
  ...set(g),
];

/** Stores at local `out` + offset the 16 lanes of locals a, b picked by `lanes`. */
const interleave = (out: number, a: number, b: number, lanes: number[], offset: number) => [
  ...get(out),
  ...get(a),
  ...get(b),
  ...SHUFFLE(lanes),
  ...V_STORE(offset),
];

/** Stores the 32 codes of v128 local `v` (indices into local `table`) at local `out`; clobbers `lo`. */
const expand = (table: number, v: number, lo: number, out: number) => [
  ...get(table),
  ...get(v),
  ...V_SPLAT8(0x0f),
  ...V_AND,
  ...SWIZZLE,
  ...set(lo),
  ...get(table),
  ...get(v),
  ...i32(4),
  ...U8_SHR,
  ...SWIZZLE,
  ...set(v),
  ...interleave(out, lo, v, INTERLEAVE_LOW, 0),
  ...interleave(out, lo, v, INTERLEAVE_HIGH, 16),
];

/** `end = blocks + n * 16` for locals blocks, n and end (one 16-byte MXFP4 block each). */
const blocksEnd = (blocks: number, n: number, end: number) => [
  ...get(blocks),
  ...get(n),
  ...i32(4),
  ...I32_SHL,
  ...I32_ADD,
  ...set(end),
];

/** Opens the block and loop over blocks, leaving when local `blocks` reaches local `end`. */
const loopUntil = (blocks: number, end: number) => [
  ...BLOCK_LOOP,
  ...get(blocks),
  ...get(end),
  ...I32_GE_U,
  ...brIf(1),
];

/** Address of the i32 slot of the 128-column tile holding group g (local) in the array at local base. */
const tileSlot = (base: number, g: number) => [
  ...get(base),
  ...get(g),
  ...i32(2),
  ...I32_SHR_U,
  ...i32(2),
  ...I32_SHL,
  ...I32_ADD,
];

/** `bound` where local d compares (`compare`, signed) past it, else d: one side of a clamp. */
const clampSide = (d: number, bound: number, compare: number[]) => [
  ...i32(bound),
  ...get(d),
  ...get(d),
  ...i32(bound),
  ...compare,
  ...SELECT,
];

const advance = (local: number, by: number) => [...get(local), ...i32(by), ...I32_ADD, ...set(local)];

/**
 * tops(blocks, scales, n, groups, tmax): for n blocks, row-major with `groups` blocks a row, raise
 * tmax[g >> 2] (i32, one per 128-column tile) to (top binade of the block's elements) + scale code.
 * The top binade follows from which magnitude bits are set: both bits 2 and 1 (4, 6) give 2, bit 2
 * alone (2, 3) 1, bit 1 (1, 1.5) 0, bit 0 (0.5) -1; an all-zero block adds TILE_NONE instead.
 */
function topsBody(): number[] {
  // params 0 blocks, 1 scales, 2 n, 3 groups, 4 tmax | locals 5 end, 6 g, 7 t, 8 addr, 9 old, 10 v, 11 both
  const anyOf = (local: number, mask: number) => [...get(local), ...V_SPLAT8(mask), ...V_AND, ...ANY_TRUE];
  return [
    ...locals([5, I32], [2, V128]),
    ...blocksEnd(0, 2, 5),
    ...loopUntil(0, 5),
    ...get(0),
    ...V_LOAD,
    ...tee(10),
    ...get(10),
    ...i32(1),
    ...I16_SHL, // bit 2 of each byte's nibbles now holds its bit 1; no bit crosses into a tested one
    ...V_AND,
    ...set(11),
    ...i32(2),
    ...i32(1),
    ...i32(0),
    ...i32(-1),
    ...i32(TILE_NONE),
    ...anyOf(10, 0x11),
    ...SELECT,
    ...anyOf(10, 0x22),
    ...SELECT,
    ...anyOf(10, 0x44),
    ...SELECT,
    ...anyOf(11, 0x44),
    ...SELECT,
    ...get(1),
    ...LOAD8_U,
    ...I32_ADD,
    ...set(7),
    ...tileSlot(4, 6),
    ...tee(8),
    ...LOAD,
    ...set(9),
    ...get(8),
    ...get(7),
    ...get(9),
    ...get(7),
    ...get(9),
    ...I32_GT_S,
    ...SELECT,
    ...STORE,
    ...advance(0, 16),
    ...advance(1, 1),
    ...nextGroup(6, 3),
    ...END_LOOP,
    0x0b,
  ];
}

/**
 * shifted(blocks, scales, out, n, groups, bias, tables) -> count: each block's shift is its scale
 * code minus bias[g >> 2] (i32 per tile: the tile's m + 127); codes from the table for that shift,
 * clamped into the covered range. Returns how many blocks needed a shift below SIMD_SHIFT_MIN.
 */
function shiftedBody(): number[] {
  // params 0 blocks, 1 scales, 2 out, 3 n, 4 groups, 5 bias, 6 tables | 7 end, 8 g, 9 d, 10 low | 11 table, 12 v, 13 lo
  return [
    ...locals([4, I32], [3, V128]),
    ...blocksEnd(0, 3, 7),
    ...loopUntil(0, 7),
    ...get(1),
    ...LOAD8_U,
    ...tileSlot(5, 8),
    ...LOAD,
    ...I32_SUB,
    ...tee(9),
    ...i32(SIMD_SHIFT_MIN),
    ...I32_LT_S,
    ...get(10),
    ...I32_ADD,
    ...set(10),
    ...clampSide(9, SIMD_SHIFT_MIN, I32_LT_S),
    ...set(9),
    ...clampSide(9, SIMD_SHIFT_MAX, I32_GT_S),
    ...i32(-SIMD_SHIFT_MIN),
    ...I32_ADD,
    ...i32(4),
    ...I32_SHL,
    ...get(6),
    ...I32_ADD,
    ...V_LOAD,
    ...set(11),
    ...get(0),
    ...V_LOAD,
    ...set(12),
    ...expand(11, 12, 13, 2),
    ...advance(0, 16),
    ...advance(1, 1),
    ...advance(2, 32),
    ...nextGroup(8, 4),
    ...END_LOOP,
    ...get(10),
    0x0b,
  ];
}

/** plain(blocks, out, n, table): every block with the one table (the per-32 layout: shift 0). */
function plainBody(): number[] {
  // params 0 blocks, 1 out, 2 n, 3 table | locals 4 end | 5 table, 6 v, 7 lo
  return [
    ...locals([1, I32], [3, V128]),
    ...blocksEnd(0, 2, 4),
    ...get(3),
    ...V_LOAD,
    ...set(5),
    ...loopUntil(0, 4),
    ...get(0),
    ...V_LOAD,
    ...set(6),
    ...expand(5, 6, 7, 1),
    ...advance(0, 16),
    ...advance(1, 32),
    ...END_LOOP,
    0x0b,
  ];
}

export function simdModuleBytes(): Uint8Array {
  const i32s = (n: number) => new Array<number>(n).fill(I32);
  return wasmModuleBytes({
    types: [funcType(i32s(5), []), funcType(i32s(7), [I32]), funcType(i32s(4), [])],
    functions: [
      { type: 0, body: topsBody() },
      { type: 1, body: shiftedBody() },
      { type: 2, body: plainBody() },
    ],
    exports: [
      ["tops", 0],
      ["shifted", 1],
      ["plain", 2],
    ],
  });
}

export interface SimdExports {
  tops(blocks: number, scales: number, n: number, groups: number, tmax: number): void;
  shifted(
    blocks: number,
    scales: number,
    out: number,
    n: number,
    groups: number,
    bias: number,
    tables: number,
  ): number;
  plain(blocks: number, out: number, n: number, table: number): void;
}

let compiled: WasmModule | null | undefined;

/** The compiled module, or null where WebAssembly SIMD or shared memory is unavailable. */
function simdModule(): WasmModule | null {
  if (compiled === undefined) compiled = compileWasm(simdModuleBytes()) ?? null;
  return compiled;
}

const PAGE = 65536;
const ALIGN = 64;

/**
 * One thread's working memory for conversions: a shared WebAssembly memory with the kernel's
 * tables at its start and regions handed out and given back. Reads land in it and results are sent
 * as views of it, so nothing is copied between the file, the kernel and the writer; a shared memory
 * never moves when it grows, so views and I/O in flight stay valid.
 */
export class SimdArena {
  readonly kernel: SimdExports;
  readonly #memory: WasmSharedMemory;
  readonly #buffers = new WeakSet<SharedArrayBuffer>();
  readonly #free: { at: number; bytes: number }[] = [];
  readonly #sizes = new Map<number, number>();
  #top: number;
  /** Byte offset of the shift tables: 16 codes per shift from SIMD_SHIFT_MIN up. */
  readonly tables = 0;

  private constructor(module: WasmModule, tables: (d: number) => ArrayLike<number>) {
    this.#memory = new (wasmApi as WasmApi).Memory({ initial: 1, maximum: 65536, shared: true });
    this.kernel = instantiateWasm(module, this.#memory) as SimdExports;
    const bytes = new Uint8Array(this.#memory.buffer);
    for (let d = SIMD_SHIFT_MIN; d <= SIMD_SHIFT_MAX; d += 1) bytes.set(tables(d), (d - SIMD_SHIFT_MIN) * 16);
    this.#top = (SIMD_SHIFT_MAX - SIMD_SHIFT_MIN + 1) * 16;
  }

  /** An arena, or undefined where WebAssembly SIMD is unavailable (the plain path then runs). */
  static create(tables: (d: number) => ArrayLike<number>): SimdArena | undefined {
    const module = simdModule();
    return module === null ? undefined : new SimdArena(module, tables);
  }

  /** Offset of the table for shift d. */
  table(d: number): number {
    return this.tables + (d - SIMD_SHIFT_MIN) * 16;
  }

  /** A region of at least `bytes`, 64-byte aligned. Its old contents are undefined. */
  alloc(bytes: number): Uint8Array {
    const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
    let fit = -1;
    for (let i = 0; i < this.#free.length; i += 1) {
      const region = this.#free[i] as { at: number; bytes: number };
      if (region.bytes >= size && (fit < 0 || region.bytes < (this.#free[fit] as { bytes: number }).bytes))
        fit = i;
    }
    let at: number;
    if (fit >= 0) {
      const region = this.#free.splice(fit, 1)[0] as { at: number; bytes: number };
      at = region.at;
      this.#sizes.set(at, region.bytes);
    } else {
      at = Math.ceil(this.#top / ALIGN) * ALIGN;
      this.#top = at + size;
      const length = this.#memory.buffer.byteLength;
      if (this.#top > length) this.#memory.grow(Math.ceil((this.#top - length) / PAGE));
      this.#sizes.set(at, size);
    }
    return this.view(at, bytes);
  }

  /** Gives a region back, by a view starting at it (or its offset). */
  release(region: Uint8Array | number): void {
    const at = typeof region === "number" ? region : region.byteOffset;
    const bytes = this.#sizes.get(at);
    if (bytes === undefined) return;
    this.#sizes.delete(at);
    this.#free.push({ at, bytes });
  }

  /** Whether `array` is a view of this arena's memory. */
  owns(array: ArrayBufferView): boolean {
    return array.buffer instanceof SharedArrayBuffer && this.#buffers.has(array.buffer);
  }

  /** A view of bytes [at, at + bytes) of the memory. */
  view(at: number, bytes: number): Uint8Array {
    const buffer = this.#memory.buffer;
    this.#buffers.add(buffer);
    return new Uint8Array(buffer, at, bytes);
  }
}
