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

/** Each group of four rows' blocks of 32 moved from row-major places to interleaved ones (or back). */
function permuteGroups(codes: Uint8Array, cols: number, interleave: boolean): Uint8Array {
  const group = new Uint8Array(4 * cols);
  for (let at = 0; at + 4 * cols <= codes.length; at += 4 * cols) {
    group.set(codes.subarray(at, at + 4 * cols));
    for (let r = 0; r < 4; r++)
      for (let k = 0; k < cols; k += BLOCK) {
        const [rowMajor, interleaved] = [r * cols + k, k * 4 + r * BLOCK];
        const [from, to] = interleave ? [rowMajor, interleaved] : [interleaved, rowMajor];
        codes.set(group.subarray(from, from + BLOCK), at + to);
      }
  }
  return codes;
}
