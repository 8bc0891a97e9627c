import { lanesIndex } from "../../formats/fp8-lanes.js";
import { quadsIndex } from "../../formats/fp8-quads.js";
import { HALVES_BYTE_OF } from "../../formats/mxfp4-halves.js";
import { quadIndex } from "../tensor/row-quads.js";
import type { Weight } from "../tensor/weight.js";

/**
 * Scalar reference kernels: the plainest correct arithmetic, one element at a time, used by tests
 * as the golden against which the fast paths are checked.
 */

/** Decodes one fp8 e4m3fn byte from its bit fields. */
export function decodeFp8E4m3(byte: number): number {
  const sign = byte & 0x80 ? -1 : 1;
  const exp = (byte >> 3) & 0xf;
  const man = byte & 7;
  if (exp === 15 && man === 7) return Number.NaN;
  if (exp === 0) return sign * 2 ** -6 * (man / 8);
  return sign * 2 ** (exp - 7) * (1 + man / 8);
}

/** Decodes one e2m1 nibble. */
export function decodeE2m1(nibble: number): number {
  const sign = nibble & 8 ? -1 : 1;
  const exp = (nibble >> 1) & 3;
  const man = nibble & 1;
  if (exp === 0) return sign * 0.5 * man;
  return sign * 2 ** (exp - 1) * (1 + man / 2);
}

function decodeBf16(bits: number): number {
  const buf = new DataView(new ArrayBuffer(4));
  buf.setUint32(0, bits << 16);
  return buf.getFloat32(0);
}

function decodeF16(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const man = bits & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (man / 1024);
  if (exp === 31) return man === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * 2 ** (exp - 15) * (1 + man / 1024);
}

/** The value of W[n][k] in f32, decoded element by element. */
export function weightAt(w: Weight, n: number, k: number): number {
  const i = n * w.cols + k;
  switch (w.dtype) {
    case "f32":
      return w.data[w.layout === "row-quads" ? quadIndex(n, k, w.rows, w.cols) : i] as number;
    case "bf16":
      return decodeBf16(w.data[i] as number);
    case "f16":
      return decodeF16(w.data[i] as number);
    case "fp8_e4m3": {
      const at = w.fp8Order === "lanes" ? lanesIndex(i) : w.fp8Order === "quads" ? quadsIndex(i, w.cols) : i;
      const v = decodeFp8E4m3(w.data[at] as number);
      const s = w.scale;
      if (s === undefined) return v;
      const perRow = Math.ceil(w.cols / s.blockCols);
      return Math.fround(
        v * (s.data[Math.floor(n / s.blockRows) * perRow + Math.floor(k / s.blockCols)] as number),
      );
    }
    case "mxfp4": {
      // OCP order: value i in byte i >> 1, odd values high; halves order: value j of a block of 32
      // in byte HALVES_BYTE_OF[j mod 16] of its 16, values from 16 on high.
      const halves = w.mxfp4Order === "halves";
      const byte = w.data[halves ? ((i >> 5) << 4) | (HALVES_BYTE_OF[i & 15] as number) : i >> 1] as number;
      const nibble = (halves ? i & 16 : i % 2) === 0 ? byte & 15 : byte >> 4;
      const e = (w.mxScales as Uint8Array)[i >> 5] as number;
      return decodeE2m1(nibble) * (e === 255 ? Number.NaN : 2 ** (e - 127));
    }
  }
}

/** out[m][n] = Σ_k x[m][k]·W[n][k], summed left to right. */
export function matmulReference(x: Float32Array, M: number, w: Weight, out: Float32Array): void {
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < w.rows; n++) {
      let s = 0;
      for (let k = 0; k < w.cols; k++) s += (x[m * w.cols + k] as number) * weightAt(w, n, k);
      out[m * w.rows + n] = s;
    }
  }
}
