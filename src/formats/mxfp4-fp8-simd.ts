/**
 * A WebAssembly SIMD kernel for MXFP4 to FP8 E4M3, and the shared memory it works in.
 *
 * One MXFP4 block is 16 bytes, exactly one v128: its low and high nibbles index a 16-byte table
 * of E4M3 codes (i8x16.swizzle) and two shuffles interleave them into the 32 output codes, low
 * nibble first. Each shift d (value = e2m1 * 2^d) has its own table, for every shift a block can
 * have, so the loop needs no clamping; the tables are the plain path's exact codes
 * (`shiftedE4m3`, 0x7f where a nibble cannot be exact), so the two paths agree by construction and
 * the tests compare them bit for bit. Blocks with a shift below ALL_EXACT_SHIFT are only counted
 * here: the caller redoes their band on the plain path, which names what is inexact. Every index
 * the kernel swizzles by is under 16, where relaxed SIMD's swizzle is defined to agree with the
 * plain one; where the runtime has it, it runs without the plain swizzle's range fix-up (one
 * saturating add per lookup), which made the tile kernel 10-15% faster here.
 *
 * Assembled here from its opcodes with the shared pieces of common/wasm-assembler.ts.
 */

import {
  addTo,
  brIf,
  compileWasm,
  countedLoop,
  funcType,
  localGet as get,
  I32,
  I32_ADD,
  I32_EQZ,
  I32_LT_S,
  I32_SHL,
  I32_SHR_U,
  I32_SUB,
  i8x16Swizzle,
  i32Const as i32,
  instantiateWasm,
  locals,
  relaxedSimdAvailable,
  localSet as set,
  simd,
  uleb,
  V128,
  v128Load,
  v128Store,
  type WasmApi,
  type WasmModule,
  type WasmSharedMemory,
  wasmApi,
  wasmModuleBytes,
} from "../common/wasm-assembler.js";

/**
 * Shifts the tables cover: every scale code 0-254 against every tile bias the caller can set (a
 * tile's m + 127, from -9 for a tile topped by 0.5 * 2^-127 to 244 for one topped by 6 * 2^125).
 */
export const SIMD_SHIFT_MIN = -256;
export const SIMD_SHIFT_MAX = 271;
/**
 * Below this shift some E2M1 magnitude falls under E4M3's smallest subnormal; from it up, every
 * element is exact, given a scale chosen so none overflows (mxfp4-to-fp8.test.ts enumerates it).
 */
export const ALL_EXACT_SHIFT = -8;
/**
 * A tile lane value the kernel cannot tell apart from overflow: the top of a block scaled by a code
 * of 252 or more; such bands run on the plain path.
 */
export const TOP_SATURATED = 255;

const LOAD = [0x28, 0x02, 0x00];
const I32_AND = [0x71];
const LOAD8_U = (offset: number) => [0x2d, 0x00, ...uleb(offset)];
const V_LOAD = v128Load(0, 0);
const V_STORE = (offset: number) => v128Store(0, offset);
const V_CONST = (bytes: number[]) => simd(0x0c, ...bytes);
const SPLAT8 = simd(0x0f);
const SHUFFLE = (lanes: number[]) => simd(0x0d, ...lanes);
const I8_EQ = simd(0x23);
const V_AND = simd(0x4e);
const V_ANDNOT = simd(0x4f);
const U8_ADD_SAT = simd(0x70);
const U8_MAX = simd(0x79);
const I16_SHR_U = simd(0x8d);

const INTERLEAVE_LOW = Array.from({ length: 16 }, (_, i) => (i >> 1) + (i & 1) * 16);
const INTERLEAVE_HIGH = INTERLEAVE_LOW.map((lane) => lane + 8);

/** The high nibble of each byte of v128 local `v`, masked by v128 local `mask` (0x0f or 0x07 lanes). */
const highNibbles = (v: number, mask: number) => [...get(v), ...i32(4), ...I16_SHR_U, ...get(mask), ...V_AND];

/**
 * Stores at local `out` + 32 `at` the 32 codes of the block at local `blocks` + 16 `at`, looked up in
 * v128 local `table` by nibble (`mask`: 0x0f lanes); clobbers v128 locals `v` and `lo`.
 */
const expand = (
  table: number,
  blocks: number,
  out: number,
  at: number,
  [mask, v, lo]: number[],
  SWIZZLE: number[],
) => [
  ...get(blocks),
  ...v128Load(0, 16 * at),
  ...set(v as number),
  ...get(table),
  ...get(v as number),
  ...get(mask as number),
  ...V_AND,
  ...SWIZZLE,
  ...set(lo as number),
  ...get(table),
  ...highNibbles(v as number, mask as number),
  ...SWIZZLE,
  ...set(v as number),
  ...[
    ...get(out),
    ...get(lo as number),
    ...get(v as number),
    ...SHUFFLE(INTERLEAVE_LOW),
    ...V_STORE(32 * at),
  ],
  ...[
    ...get(out),
    ...get(lo as number),
    ...get(v as number),
    ...SHUFFLE(INTERLEAVE_HIGH),
    ...V_STORE(32 * at + 16),
  ],
];

const splatBytes = (byte: number) => V_CONST(new Array<number>(16).fill(byte));

/**
 * tops(blocks, scales, rows, groups, tiles): for a band of rows x groups blocks, stores at
 * tiles + 16 t one v128 per 128-column tile t whose byte lanes the caller reduces to the tile's
 * largest value. A lane holds two elements of a block; its value is 0 when both are zero, else the
 * saturated sum of the block's scale code and 2 + the top binade of the larger one: 4 and 6
 * (magnitude codes 6, 7) are binade 2, 2 and 3 binade 1, 1 and 1.5 binade 0, 0.5 binade -1. Tiles
 * go one at a time down the band, so each keeps its running maximum in a register.
 */
function topsBody(SWIZZLE: number[]): number[] {
  // params 0 blocks, 1 scales, 2 rows, 3 groups, 4 tiles
  // | locals 5 t, 6 r, 7 whole, 8 bp, 9 sp, 10 rowBytes, 11 ragged, 12 j, 13 bj, 14 sj
  // | 15 mask, 16 table, 17 zero, 18 top, 19 v, 20 lanes
  const binadePlus2 = [0, 1, 2, 2, 3, 3, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0];
  /** top = max(top, lane values of the block at local bp + 16 at, scale at local sp + at). */
  const raise = (bp: number, sp: number, at: number) => [
    ...get(bp),
    ...v128Load(0, 16 * at),
    ...set(19),
    ...get(18),
    ...get(16),
    ...get(19),
    ...get(15),
    ...V_AND,
    ...highNibbles(19, 15),
    ...U8_MAX,
    ...SWIZZLE,
    ...set(20),
    ...get(20),
    ...get(sp),
    ...LOAD8_U(at),
    ...SPLAT8,
    ...U8_ADD_SAT,
    ...get(20),
    ...get(17),
    ...I8_EQ,
    ...V_ANDNOT, // lanes of two zeros stay 0
    ...U8_MAX,
    ...set(18),
  ];
  const nextRow = [...get(8), ...get(10), ...I32_ADD, ...set(8), ...get(9), ...get(3), ...I32_ADD, ...set(9)];
  /** Points bp and sp at the first block of tile t (local) and clears top. */
  const startTile = [
    ...get(0),
    ...get(5),
    ...i32(6),
    ...I32_SHL,
    ...I32_ADD,
    ...set(8),
    ...get(1),
    ...get(5),
    ...i32(2),
    ...I32_SHL,
    ...I32_ADD,
    ...set(9),
    ...get(17),
    ...set(18),
  ];
  const storeTile = [...get(4), ...get(5), ...i32(4), ...I32_SHL, ...I32_ADD, ...get(18), ...V_STORE(0)];
  const ragged = [
    ...get(7),
    ...set(5),
    ...startTile,
    ...countedLoop(6, 2, [
      ...get(8),
      ...set(13),
      ...get(9),
      ...set(14),
      ...countedLoop(12, 11, [...raise(13, 14, 0), ...addTo(13, 16), ...addTo(14, 1)]),
      ...nextRow,
    ]),
    ...storeTile,
  ];
  return [
    ...locals([10, I32], [6, V128]),
    ...splatBytes(7),
    ...set(15),
    ...V_CONST(binadePlus2),
    ...set(16),
    ...splatBytes(0),
    ...set(17),
    ...[...get(3), ...i32(4), ...I32_SHL, ...set(10)],
    ...[...get(3), ...i32(2), ...I32_SHR_U, ...set(7)],
    ...[...get(3), ...i32(3), ...I32_AND, ...set(11)],
    ...countedLoop(5, 7, [
      ...startTile,
      ...countedLoop(6, 2, [
        ...raise(8, 9, 0),
        ...raise(8, 9, 1),
        ...raise(8, 9, 2),
        ...raise(8, 9, 3),
        ...nextRow,
      ]),
      ...storeTile,
    ]),
    ...[...get(11), ...I32_EQZ, ...brIf(0)],
    ...ragged,
    0x0b,
  ];
}

/**
 * shifted(blocks, scales, out, rows, groups, bias, tables) -> count: each block's shift is its
 * scale code minus bias[g >> 2] (i32 per 128-column tile: the tile's m + 127), and its codes come
 * from the table for that shift (`tables` points at shift 0's). Returns how many blocks have a
 * shift below ALL_EXACT_SHIFT. A row goes a whole tile (four blocks, one bias) at a time, then
 * block by block through a ragged last tile.
 */
function shiftedBody(SWIZZLE: number[]): number[] {
  // params 0 blocks, 1 scales, 2 out, 3 rows, 4 groups, 5 bias, 6 tables
  // | locals 7 r, 8 q, 9 whole, 10 low, 11 tileTables, 12 floor, 13 bp, 14 scale, 15 g, 16 ragged
  // | 17 mask, 18 table, 19 v, 20 lo
  const scratch = [17, 19, 20];
  // For the tile at bias pointer bp: tileTables = tables - 16 bias (add 16 scale for a block's
  // table); floor = bias + ALL_EXACT_SHIFT (a scale code below it is a low shift).
  const tileSetup = [
    ...get(6),
    ...get(13),
    ...LOAD,
    ...i32(4),
    ...I32_SHL,
    ...I32_SUB,
    ...set(11),
    ...get(13),
    ...LOAD,
    ...i32(ALL_EXACT_SHIFT),
    ...I32_ADD,
    ...set(12),
  ];
  const blockAt = (at: number) => [
    ...get(1),
    ...LOAD8_U(at),
    ...set(14),
    ...get(10),
    ...get(14),
    ...get(12),
    ...I32_LT_S,
    ...I32_ADD,
    ...set(10),
    ...get(11),
    ...get(14),
    ...i32(4),
    ...I32_SHL,
    ...I32_ADD,
    ...V_LOAD,
    ...set(18),
    ...expand(18, 0, 2, at, scratch, SWIZZLE),
  ];
  const step = (blocksDone: number) => [
    ...addTo(0, 16 * blocksDone),
    ...addTo(1, blocksDone),
    ...addTo(2, 32 * blocksDone),
  ];
  const row = [
    ...get(5),
    ...set(13),
    ...countedLoop(8, 9, [
      ...tileSetup,
      ...blockAt(0),
      ...blockAt(1),
      ...blockAt(2),
      ...blockAt(3),
      ...step(4),
      ...addTo(13, 4),
    ]),
    ...tileSetup,
    ...countedLoop(15, 16, [...blockAt(0), ...step(1)]),
  ];
  return [
    ...locals([10, I32], [4, V128]),
    ...splatBytes(0x0f),
    ...set(17),
    ...get(4),
    ...i32(2),
    ...I32_SHR_U,
    ...set(9),
    ...get(4),
    ...i32(3),
    ...I32_AND,
    ...set(16),
    ...countedLoop(7, 3, row),
    ...get(10),
    0x0b,
  ];
}

/** plain(blocks, out, n, table): every block with the one table (the per-32 layout: shift 0). */
function plainBody(SWIZZLE: number[]): number[] {
  // params 0 blocks, 1 out, 2 n, 3 table | locals 4 i | 5 mask, 6 table, 7 v, 8 lo
  return [
    ...locals([1, I32], [4, V128]),
    ...splatBytes(0x0f),
    ...set(5),
    ...get(3),
    ...V_LOAD,
    ...set(6),
    ...countedLoop(4, 2, [...expand(6, 0, 1, 0, [5, 7, 8], SWIZZLE), ...addTo(0, 16), ...addTo(1, 32)]),
    0x0b,
  ];
}

export function simdModuleBytes(relaxed = false): Uint8Array {
  const swizzle = i8x16Swizzle(relaxed);
  const i32s = (n: number) => new Array<number>(n).fill(I32);
  return wasmModuleBytes({
    types: [funcType(i32s(5), []), funcType(i32s(7), [I32]), funcType(i32s(4), [])],
    functions: [
      { type: 0, body: topsBody(swizzle) },
      { type: 1, body: shiftedBody(swizzle) },
      { type: 2, body: plainBody(swizzle) },
    ],
    exports: [
      ["tops", 0],
      ["shifted", 1],
      ["plain", 2],
    ],
  });
}

export interface SimdExports {
  tops(blocks: number, scales: number, rows: number, groups: number, tiles: number): void;
  shifted(
    blocks: number,
    scales: number,
    out: number,
    rows: number,
    groups: number,
    bias: number,
    tables: number,
  ): number;
  plain(blocks: number, out: number, n: number, table: number): void;
}

const compiled = new Map<boolean, WasmModule | null>();

/** The compiled module, or null where WebAssembly SIMD (relaxed, if asked) or shared memory is unavailable. */
function simdModule(relaxed: boolean): WasmModule | null {
  if (!compiled.has(relaxed)) compiled.set(relaxed, compileWasm(simdModuleBytes(relaxed)) ?? null);
  return compiled.get(relaxed) ?? null;
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
  /** Byte offset of shift 0's table; shift d's 16 codes are at tables + 16 d. */
  readonly tables = -SIMD_SHIFT_MIN * 16;

  private constructor(
    module: WasmModule,
    tables: (d: number) => ArrayLike<number>,
    /** Whether the kernel swizzles with relaxed SIMD's instruction. */
    readonly relaxed: boolean,
  ) {
    this.#memory = new (wasmApi as WasmApi).Memory({ initial: 1, maximum: 65536, shared: true });
    this.kernel = instantiateWasm(module, this.#memory) as SimdExports;
    const bytes = new Uint8Array(this.#memory.buffer);
    for (let d = SIMD_SHIFT_MIN; d <= SIMD_SHIFT_MAX; d += 1) bytes.set(tables(d), (d - SIMD_SHIFT_MIN) * 16);
    this.#top = (SIMD_SHIFT_MAX - SIMD_SHIFT_MIN + 1) * 16;
  }

  /**
   * An arena, or undefined where WebAssembly SIMD is unavailable (the plain path then runs). Its
   * kernel uses relaxed SIMD where the runtime has it, unless `relaxed` is false.
   */
  static create(tables: (d: number) => ArrayLike<number>, relaxed = true): SimdArena | undefined {
    const useRelaxed = relaxed && relaxedSimdAvailable();
    const module = simdModule(useRelaxed);
    return module === null ? undefined : new SimdArena(module, tables, useRelaxed);
  }

  /** Offset of the table for shift d. */
  table(d: number): number {
    return this.tables + d * 16;
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
