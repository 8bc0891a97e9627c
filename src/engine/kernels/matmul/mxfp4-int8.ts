/**
 * The integer MXFP4 path (`mxfp4=int8`, mxfp4-int8.wat): each input row is quantized per block of
 * 32 values to int8 with one f32 scale, s = max|x| / 127 and q = round(x / s), and each block's
 * products are summed as integers by relaxed integer dot products, then scaled once per block.
 *
 * mxfp4-int8.wat's `quantize` does this in WebAssembly; quantizeInput here is its plain reference.
 *
 * Not the f32 path's bits. Against the exact sum Σ_k x_k·w_k, an output is off by at most
 * Σ_b (s_b / 2)(1 + 2^-16)·Σ_{k∈b} |w_k| (the quantization: x / s is rounded to f32, |x / s| < 128,
 * before it is rounded to an integer, so |x - q·s| ≤ s·(1/2 + 2^-17)) plus f32 rounding of the
 * per-block terms, (K/32 + 2)·2^-24·Σ_b |term_b| (mxfp4-int8.test.ts holds every output to it).
 */

import { HALVES_ORDER } from "../../../formats/mxfp4-halves.js";

/**
 * Bytes per input block in the quantized layout: the 16 int8 inputs the codes' low nibbles meet,
 * the 16 the high nibbles meet, an i16x8 correction, the block's f32 scale, 12 zero bytes (a cache
 * line a block; the kernel keeps one pointer for a block and its scale).
 *
 * The layout comes in two forms, one for each code order (formats/mxfp4-halves.ts), written side
 * by side: for OCP codes the inputs of even k then of odd k; for halves codes those of k =
 * HALVES_ORDER[j] then of HALVES_ORDER[j] + 16. The kernel is the same for both; the products it
 * sums are the same integers, so a weight gives the same bits in either order.
 */
export const INT8_BLOCK_BYTES = 64;

/** mxfp4-int8.wat's export (see there for the arguments). */
export type Mxfp4Int8 = (
  K: number,
  M: number,
  q: number,
  blocks: number,
  exps: number,
  expStride: number,
  o: number,
  N: number,
  ldo: number,
) => void;

/** mxfp4-int8.wat's `quantize`: x [M, K] (f32 at byte x) into the layout at byte q, as quantizeInput. */
export type Int8Quantize = (x: number, M: number, K: number, q: number) => void;

/** Bytes one form (one code order's) of an [M, K] input quantized takes: the halves form's offset from the OCP form's. */
export function quantizedFormBytes(M: number, K: number): number {
  return M * (K / 32) * INT8_BLOCK_BYTES;
}

/** Bytes the quantized [M, K] input takes: its OCP form, then its halves form. */
export function quantizedBytes(M: number, K: number): number {
  return 2 * quantizedFormBytes(M, K);
}

/** v rounded to the nearest integer, ties to even. */
function roundTiesEven(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Quantizes x [M, K] (K a multiple of 32) into the kernel's layout at byte `at` of `buffer`: for
 * row m and block b, INT8_BLOCK_BYTES at at + 64(m·K/32 + b) in the OCP form, and as many again
 * past quantizedFormBytes(M, K) in the halves form (see mxfp4-int8.wat). Per block s = max|x| / 127 in f32, or the least normal f32 2^-126 where
 * that is less (a subnormal s would hold too few bits for x / s to stay within 127), and q = x / s
 * in f32 rounded to the nearest integer, ties to even (|q| <= 127: s is at least max|x| / 127 less
 * half an ulp, so |x / s| rounds to at most 127). A block of zeros gets s = 0 and q = 0; a block
 * holding a non-finite value gets s = NaN (and q = 0), so its outputs are NaN. The plain reference of the
 * kernel's own quantize (mxfp4-int8.wat), which writes the same bytes.
 */
export function quantizeInput(
  x: Float32Array,
  M: number,
  K: number,
  buffer: ArrayBufferLike,
  at: number,
): void {
  const blocks = M * (K / 32);
  const bytes = new Int8Array(buffer, at, 2 * blocks * INT8_BLOCK_BYTES);
  const halves = new Int16Array(buffer, at, blocks * INT8_BLOCK_BYTES);
  const words = new Float32Array(buffer, at, (blocks * INT8_BLOCK_BYTES) / 2);
  const q = new Int8Array(32);
  for (let blk = 0; blk < blocks; blk++) {
    const x0 = blk * 32;
    let amax = 0;
    for (let k = 0; k < 32; k++) amax = Math.max(amax, Math.abs(x[x0 + k] as number));
    const s = !Number.isFinite(amax)
      ? Number.NaN
      : amax === 0
        ? 0
        : Math.max(Math.fround(amax / 127), 2 ** -126);
    for (let k = 0; k < 32; k++) q[k] = s > 0 ? roundTiesEven(Math.fround((x[x0 + k] as number) / s)) : 0;
    // OCP codes: low nibble j is value 2j, high 2j + 1; halves codes: HALVES_ORDER[j] and 16 more.
    const ocpAt = blk * INT8_BLOCK_BYTES;
    const halvesAt = ocpAt + blocks * INT8_BLOCK_BYTES;
    for (let j = 0; j < 16; j++) {
      bytes[ocpAt + j] = q[2 * j] as number;
      bytes[ocpAt + 16 + j] = q[2 * j + 1] as number;
      bytes[halvesAt + j] = q[HALVES_ORDER[j] as number] as number;
      bytes[halvesAt + 16 + j] = q[(HALVES_ORDER[j] as number) + 16] as number;
    }
    // The kernel's i16 lanes 2r and 2r + 1 hold the products of the inputs of bytes 4i to 4i + 3
    // of each half, for i even and odd: in OCP form the k / 4 even and odd, in halves form the k
    // even and odd. The correction's lanes alternate -12 times their sums.
    const sums = (odd: (k: number) => boolean): [number, number] => {
      const sum: [number, number] = [0, 0];
      for (let k = 0; k < 32; k++) sum[odd(k) ? 1 : 0] += q[k] as number;
      return sum;
    };
    for (const [form, [even, odd]] of [
      [ocpAt, sums((k) => (k & 4) !== 0)],
      [halvesAt, sums((k) => (k & 1) !== 0)],
    ] as const) {
      words[(form + 48) / 4] = s;
      bytes.fill(0, form + 52, form + INT8_BLOCK_BYTES);
      for (let l = 0; l < 8; l += 2) {
        halves[(form + 32) / 2 + l] = -12 * even;
        halves[(form + 32) / 2 + l + 1] = -12 * odd;
      }
    }
  }
}
