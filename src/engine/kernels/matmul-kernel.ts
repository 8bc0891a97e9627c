/**
 * The fast matmul kernel. Both functions here are self-contained (no imports, no outer variables)
 * because their source text is also evaluated inside worker threads (see pool.ts).
 */

/** Decoding tables for the narrow dtypes: f16 (65536), fp8 e4m3fn (256), e2m1 (16), e8m0 (256). */
export interface DecodeTables {
  f16: Float32Array;
  fp8: Float32Array;
  fp4: Float32Array;
  e8m0: Float32Array;
}

export function buildDecodeTables(): DecodeTables {
  const f16 = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const man = h & 0x3ff;
    if (exp === 0) f16[h] = sign * man * 2 ** -24;
    else if (exp === 31) f16[h] = man === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
    else f16[h] = sign * (1 + man / 1024) * 2 ** (exp - 15);
  }
  const fp8 = new Float32Array(256);
  for (let b = 0; b < 256; b++) {
    const sign = b & 0x80 ? -1 : 1;
    const exp = (b >> 3) & 0xf;
    const man = b & 7;
    if (exp === 15 && man === 7) fp8[b] = Number.NaN;
    else if (exp === 0) fp8[b] = sign * (man / 8) * 2 ** -6;
    else fp8[b] = sign * (1 + man / 8) * 2 ** (exp - 7);
  }
  const fp4 = new Float32Array(16);
  for (let b = 0; b < 16; b++) {
    const sign = b & 8 ? -1 : 1;
    const exp = (b >> 1) & 3;
    const man = b & 1;
    fp4[b] = exp === 0 ? sign * man * 0.5 : sign * (1 + man / 2) * 2 ** (exp - 1);
  }
  const e8m0 = new Float32Array(256);
  for (let e = 0; e < 256; e++) e8m0[e] = e === 255 ? Number.NaN : 2 ** (e - 127);
  return { f16, fp8, fp4, e8m0 };
}

/**
 * out[m*N + n] = sum_k x[m*K + k] * W[n][k] for every m < M and n0 <= n < n1.
 *
 * Each weight row is dequantized once into `scratch` (length >= K) and then dotted with every input
 * row, so narrow weights never exist in f32 beyond one row. Each output element is summed in the
 * same order whatever M, n0 and n1 are, which makes results independent of batch composition and
 * of how rows are split between threads.
 */
export function matmulRange(
  x: Float32Array,
  M: number,
  K: number,
  dtype: number,
  wData: Float32Array | Uint16Array | Uint8Array,
  scaleData: Float32Array | null,
  scaleBlockRows: number,
  scaleBlockCols: number,
  mxScales: Uint8Array | null,
  out: Float32Array,
  N: number,
  n0: number,
  n1: number,
  scratch: Float32Array,
  tables: { f16: Float32Array; fp8: Float32Array; fp4: Float32Array; e8m0: Float32Array },
): void {
  const scratchBits = new Uint32Array(scratch.buffer, scratch.byteOffset, scratch.length);
  const K4 = K - (K % 4);
  for (let n = n0; n < n1; n++) {
    let row: Float32Array = scratch;
    let ro = 0;
    if (dtype === 0) {
      row = wData as Float32Array;
      ro = n * K;
    } else if (dtype === 1) {
      const src = wData as Uint16Array;
      const base = n * K;
      for (let k = 0; k < K; k++) scratchBits[k] = (src[base + k] as number) << 16;
    } else if (dtype === 2) {
      const src = wData as Uint16Array;
      const lut = tables.f16;
      const base = n * K;
      for (let k = 0; k < K; k++) scratch[k] = lut[src[base + k] as number] as number;
    } else if (dtype === 3) {
      const src = wData as Uint8Array;
      const lut = tables.fp8;
      const base = n * K;
      if (scaleData === null) {
        for (let k = 0; k < K; k++) scratch[k] = lut[src[base + k] as number] as number;
      } else {
        const blocksPerRow = Math.ceil(K / scaleBlockCols);
        const sBase = Math.floor(n / scaleBlockRows) * blocksPerRow;
        for (let k0 = 0; k0 < K; k0 += scaleBlockCols) {
          const s = scaleData[sBase + Math.floor(k0 / scaleBlockCols)] as number;
          const k1 = Math.min(K, k0 + scaleBlockCols);
          for (let k = k0; k < k1; k++) scratch[k] = (lut[src[base + k] as number] as number) * s;
        }
      }
    } else {
      const src = wData as Uint8Array;
      const scales = mxScales as Uint8Array;
      const lut = tables.fp4;
      const e8 = tables.e8m0;
      const byteBase = (n * K) >> 1;
      const scaleBase = (n * K) >> 5;
      for (let blk = 0; blk < K >> 5; blk++) {
        const s = e8[scales[scaleBase + blk] as number] as number;
        const b0 = byteBase + blk * 16;
        const k0 = blk * 32;
        for (let j = 0; j < 16; j++) {
          const byte = src[b0 + j] as number;
          scratch[k0 + 2 * j] = (lut[byte & 15] as number) * s;
          scratch[k0 + 2 * j + 1] = (lut[byte >> 4] as number) * s;
        }
      }
    }
    for (let m = 0; m < M; m++) {
      const xo = m * K;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let k = 0;
      for (; k < K4; k += 4) {
        s0 += (x[xo + k] as number) * (row[ro + k] as number);
        s1 += (x[xo + k + 1] as number) * (row[ro + k + 1] as number);
        s2 += (x[xo + k + 2] as number) * (row[ro + k + 2] as number);
        s3 += (x[xo + k + 3] as number) * (row[ro + k + 3] as number);
      }
      let s = s0 + s1 + (s2 + s3);
      for (; k < K; k++) s += (x[xo + k] as number) * (row[ro + k] as number);
      out[m * N + n] = s;
    }
  }
}
