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

/**
 * Bytes per input block in the quantized layout: 16 even-k int8, 16 odd-k int8, an i16x8
 * correction, the block's f32 scale, 12 zero bytes (a cache line a block; the kernel keeps one
 * pointer for a block and its scale).
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

/** Bytes the quantized form of an [M, K] input takes. */
export function quantizedBytes(M: number, K: number): number {
  return M * (K / 32) * INT8_BLOCK_BYTES;
}

/** v rounded to the nearest integer, ties to even. */
function roundTiesEven(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Quantizes x [M, K] (K a multiple of 32) into the kernel's layout at byte `at` of `buffer`: for
 * row m and block b, INT8_BLOCK_BYTES at at + 64(m·K/32 + b) (see mxfp4-int8.wat). Per block s = max|x| / 127 in f32, or the least normal f32 2^-126 where
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
  const bytes = new Int8Array(buffer, at, blocks * INT8_BLOCK_BYTES);
  const halves = new Int16Array(buffer, at, (blocks * INT8_BLOCK_BYTES) / 2);
  const words = new Float32Array(buffer, at, (blocks * INT8_BLOCK_BYTES) / 4);
  for (let blk = 0; blk < blocks; blk++) {
    const x0 = blk * 32;
    let amax = 0;
    for (let k = 0; k < 32; k++) amax = Math.max(amax, Math.abs(x[x0 + k] as number));
    const s = !Number.isFinite(amax)
      ? Number.NaN
      : amax === 0
        ? 0
        : Math.max(Math.fround(amax / 127), 2 ** -126);
    const out = blk * INT8_BLOCK_BYTES;
    words[(out + 48) / 4] = s;
    bytes.fill(0, out + 52, out + INT8_BLOCK_BYTES);
    // Even k to the first 16 bytes, odd k to the next. The kernel's i16 lanes 2r and 2r + 1 hold
    // the products of the inputs whose k / 4 is even and odd: the correction's lanes alternate
    // -12 times their sums.
    let even = 0;
    let odd = 0;
    for (let k = 0; k < 32; k++) {
      const q = s > 0 ? roundTiesEven(Math.fround((x[x0 + k] as number) / s)) : 0;
      bytes[out + (k & 1) * 16 + (k >> 1)] = q;
      if (k & 4) odd += q;
      else even += q;
    }
    const corr = (out + 32) / 2;
    for (let l = 0; l < 8; l += 2) {
      halves[corr + l] = -12 * even;
      halves[corr + l + 1] = -12 * odd;
    }
  }
}
