import type { WasmArena } from "../wasm-arena.js";

/**
 * An MXFP4 weight's E8M0 exponents laid out by block for the integer MXFP4 path (mxfp4-int8.wat):
 * e(n, b) - 1 at byte b·stride + n, so the kernel loads four consecutive rows' exponents of a block
 * at once (from any first row) instead of looking each up, and makes the half scales 2^(e - 128)
 * from them by a swizzle and a shift. The stride is an odd number of cache lines with at least 3
 * zero bytes past the last row (the kernel's read for fewer than four rows covers them): the
 * kernel reads a block's exponents a stride apart, and a power-of-two stride (rows 1024, 2048)
 * would put every block's line in the same few L1 sets. Only exponents in [2, 254] have their half scale as
 * a normal f32 with those bits; a weight holding another (2^-127 or less, or NaN; none in the
 * checkpoints seen) gets none, and the matmul takes the exact path for it.
 *
 * The weight's row-major exponents (`mxScales`, rows·cols/32 bytes) stay, for the exact paths; this
 * copy is as large again.
 */

/** Bytes from one block's exponents to the next's for a weight of `rows` rows. */
export function int8ExponentStride(rows: number): number {
  return (Math.ceil((rows + 3) / 64) | 1) * 64;
}

/** Bytes the layout takes for a [rows, cols] weight. */
export function int8ExponentBytes(rows: number, cols: number): number {
  return (cols / 32) * int8ExponentStride(rows);
}

/** Whether every exponent lies in [2, 254], as the layout needs. */
export function int8ExponentsFit(mxScales: Uint8Array): boolean {
  return mxScales.every((e) => e >= 2 && e <= 254);
}

/** `mxScales` ([rows, cols/32] E8M0 exponents, row-major, each in [2, 254]) in the layout above at byte `at` of `buffer`. */
export function layInt8Exponents(
  mxScales: Uint8Array,
  rows: number,
  cols: number,
  buffer: ArrayBufferLike,
  at: number,
): void {
  const blocks = cols / 32;
  const stride = int8ExponentStride(rows);
  const out = new Uint8Array(buffer, at, int8ExponentBytes(rows, cols)).fill(0);
  for (let n = 0; n < rows; n++)
    for (let b = 0; b < blocks; b++) out[b * stride + n] = (mxScales[n * blocks + b] as number) - 1;
}

/** Each weight's layout by its exponents' array, per arena: laid out once however many pools read it. */
const laid = new WeakMap<WasmArena, WeakMap<Uint8Array, number>>();

/**
 * The layout of `mxScales` placed in the arena (once for the array): its byte offset, or -1 when
 * an exponent lies outside [2, 254] or the arena has no room.
 */
export function int8ExponentsAt(mxScales: Uint8Array, rows: number, cols: number, arena: WasmArena): number {
  const known = laid.get(arena) ?? new WeakMap<Uint8Array, number>();
  laid.set(arena, known);
  let at = known.get(mxScales);
  if (at === undefined) {
    const out = int8ExponentsFit(mxScales) ? arena.array(Uint8Array, int8ExponentBytes(rows, cols)) : null;
    if (out !== null) layInt8Exponents(mxScales, rows, cols, out.buffer, out.byteOffset);
    at = out === null ? -1 : out.byteOffset;
    known.set(mxScales, at);
  }
  return at;
}
