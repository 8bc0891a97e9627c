/**
 * The WebAssembly SIMD kernel for MXFP4 to FP8 E4M3 (wasm/mxfp4-fp8.wat), and the shared memory it
 * works in.
 *
 * One MXFP4 block is 16 bytes, exactly one v128: its nibbles index a 16-byte table of E4M3 codes.
 * Each shift d (value = e2m1 * 2^d) has its own table, for every shift a block can have, so the loop
 * needs no clamping; the tables are the plain path's exact codes (`shiftedE4m3`, 0x7f where a
 * nibble cannot be exact), so the two paths agree by construction and the tests compare them bit
 * for bit. Blocks with a shift below ALL_EXACT_SHIFT are only counted here: the caller redoes their
 * band on the plain path, which names what is inexact. Every index the kernel swizzles by is under
 * 16, where relaxed SIMD's swizzle agrees with the plain one; where the runtime has it, it runs
 * without the plain swizzle's range fix-up (one saturating add per lookup), which made the tile
 * kernel 10-15% faster here.
 */

import { compileSwizzleKernel } from "../common/built-wasm.js";
import {
  instantiateWasm,
  type WasmApi,
  type WasmModule,
  type WasmSharedMemory,
  wasmApi,
} from "../common/wasm-runtime.js";

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
    const kernel = compileSwizzleKernel(
      new URL("./wasm/mxfp4-fp8.wasm", import.meta.url),
      "FORMATS_KERNELS_NOT_BUILT",
      relaxed,
    );
    return kernel === undefined ? undefined : new SimdArena(kernel.module, tables, kernel.relaxed);
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
