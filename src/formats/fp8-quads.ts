import { lanesIndex, toLanesInPlace } from "./fp8-lanes.js";

/**
 * FP8's "quads" code order, the engine's re-layout of the FP8 E4M3 codes of matrices whose rows
 * come in whole groups of four (and whose columns in whole blocks of 32), as a load places them:
 * each group of four rows is one run of bytes in which each block of 32 columns holds the four
 * rows' 32 codes one row after another (128 bytes), each row's 32 in lanes order
 * (formats/fp8-lanes.ts). Scales are unchanged.
 *
 * Why: the engine's FP8 rows (engine/kernels/matmul/fp8-rows.wat's `.quads` build) dot four rows
 * at once, block by block; in row-major order that is four streams K bytes apart, too short for
 * the hardware prefetcher (the kernel read each next group ahead by hand), where in quads order
 * it is one sequential stream, and each row's codes lie at a constant offset from the group's.
 * This module imports nothing but the lanes order, so the kernels' threads read it.
 */
const BLOCK = 32;

/** Where code `i` of a matrix of `cols` columns (a multiple of 32) in quads order lies. */
export function quadsIndex(i: number, cols: number): number {
  const row = Math.floor(i / cols);
  const k = i - row * cols;
  const group = row - (row & 3);
  return group * cols + (k - (k & 31)) * 4 + (row & 3) * BLOCK + lanesIndex(k & 31);
}

/** FP8 codes of [rows, cols] matrices (rows of the whole run a multiple of 4, cols of 32) in file order re-laid in quads order, in place. */
export function toQuadsInPlace(codes: Uint8Array, cols: number): Uint8Array {
  return interleaveRows(toLanesInPlace(codes), cols);
}

/** Codes in lanes order (rows a multiple of 4, cols of 32) with each group of four rows interleaved by blocks of 32, in place. */
export function interleaveRows(codes: Uint8Array, cols: number): Uint8Array {
  return permuteGroups(codes, cols, true);
}

/** Codes in quads order back in lanes order, in place (the inverse of interleaveRows). */
export function quadsToLanesInPlace(codes: Uint8Array, cols: number): Uint8Array {
  return permuteGroups(codes, cols, false);
}

/**
 * Each group of four rows' blocks of 32 moved from row-major places to interleaved ones (or back),
 * as 32-bit words where the codes are aligned to them (eight a block; ~5x the speed of moving
 * each block as a subarray).
 */
function permuteGroups(codes: Uint8Array, cols: number, interleave: boolean): Uint8Array {
  const aligned = codes.byteOffset % 4 === 0;
  const [unit, width] = aligned ? [4, cols / 4] : [1, cols];
  const items = aligned ? new Uint32Array(codes.buffer, codes.byteOffset, codes.length >> 2) : codes;
  const block = BLOCK / unit;
  const group = aligned ? new Uint32Array(4 * width) : new Uint8Array(4 * width);
  for (let at = 0; at + 4 * width <= items.length; at += 4 * width) {
    group.set(items.subarray(at, at + 4 * width));
    for (let r = 0; r < 4; r++)
      for (let k = 0; k < width; k += block) {
        const [rowMajor, interleaved] = [r * width + k, k * 4 + r * block];
        const [from, to] = interleave ? [rowMajor, interleaved] : [interleaved, rowMajor];
        for (let i = 0; i < block; i++) items[at + to + i] = group[from + i] as number;
      }
  }
  return codes;
}
