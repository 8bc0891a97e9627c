/**
 * FP8's "lanes" code order, the engine's re-layout of FP8 E4M3 weights as a load places them:
 * within each group of 16 codes, byte 4i + r holds code 4·[0, 2, 1, 3][r] + i (LANES_ORDER). The
 * file order (code k in byte k) is the checkpoints'. Scales are unchanged.
 *
 * Why the engine's FP8 rows read it best (engine/kernels/matmul/fp8-rows.wat states this order):
 * they make each f32 lane of four weights from one 32-bit lane of a 16-bit word per code, a code
 * in the word's high byte. In lanes order the words' high bytes already hold codes 8-15 (each 32-bit
 * lane l: 8 + l low, 12 + l high) and one 16-bit shift left by 8 puts codes 0-7 there (l, 4 + l),
 * where the file order takes a byte swizzle for each half (the kernel's `.lanes` build,
 * scripts/build-kernels.mjs). This module imports nothing, so the kernels' threads read it.
 */
export const LANES_ORDER: readonly number[] = Array.from(
  { length: 16 },
  (_, byte) => 4 * ([0, 2, 1, 3][byte & 3] as number) + (byte >> 2),
);
/** Which byte of a group of 16 holds code k: the inverse of LANES_ORDER. */
export const LANES_BYTE_OF: readonly number[] = LANES_ORDER.map((_, k) => LANES_ORDER.indexOf(k));
const GROUP = LANES_ORDER.length;

/** Where code `i` of codes in lanes order lies (the whole tensor's groups of 16 from byte 0). */
export function lanesIndex(i: number): number {
  return (i & ~15) | (LANES_BYTE_OF[i & 15] as number);
}

/** FP8 codes in file order (whole groups of 16) re-laid in lanes order, in place. */
export function toLanesInPlace(codes: Uint8Array): Uint8Array {
  return permuteInPlace(codes, LANES_ORDER);
}

/** FP8 codes in lanes order back in file order, in place (the inverse of toLanesInPlace). */
export function fromLanesInPlace(codes: Uint8Array): Uint8Array {
  return permuteInPlace(codes, LANES_BYTE_OF);
}

/** Each group's byte i becomes its byte `from[i]`. */
function permuteInPlace(codes: Uint8Array, from: readonly number[]): Uint8Array {
  const group = new Uint8Array(GROUP);
  for (let at = 0; at + GROUP <= codes.length; at += GROUP) {
    group.set(codes.subarray(at, at + GROUP));
    for (let i = 0; i < GROUP; i++) codes[at + i] = group[from[i] as number] as number;
  }
  return codes;
}
