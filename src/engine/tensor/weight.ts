import { BringupError } from "../../common/errors.js";
import { wasmArena } from "../kernels/wasm-arena.js";

/** Storage dtypes a matmul weight may keep; each is dequantized inside the matmul, row by row. */
export type WeightDtype = "f32" | "bf16" | "f16" | "fp8_e4m3" | "mxfp4";

/** Numeric codes used by the worker kernels, which cannot import anything. */
export const DTYPE_CODE: Record<WeightDtype, number> = { f32: 0, bf16: 1, f16: 2, fp8_e4m3: 3, mxfp4: 4 };

/**
 * A 2-D weight [rows = output features, cols = input features], row-major (f32: or in row quads),
 * in its storage dtype.
 * Buffers are SharedArrayBuffer-backed so matmul workers read them without copying.
 *
 * - f32: `data` Float32Array of rows*cols; row-major unless `layout` says "row-quads" (rows in
 *   groups of four interleaved every four values, as the matmul tile reads them: row-quads.ts).
 * - bf16 / f16: `data` Uint16Array of rows*cols raw bits.
 * - fp8_e4m3: `data` Uint8Array of rows*cols; `scale` multiplies blocks of blockRows x blockCols
 *   (per-tensor when the block covers the whole matrix), as in HF `weight_scale_inv`. With
 *   `fp8Order` "lanes" (as the loader re-lays them, formats/fp8-lanes.ts; cols a multiple of 32),
 *   each row's groups of 16 hold code LANES_ORDER[i] in byte i; "quads" (as the loader re-lays
 *   matrices of whole groups of four rows, formats/fp8-quads.ts), each group's rows interleaved
 *   by blocks of 32 codes, each in lanes order.
 * - mxfp4: `data` Uint8Array of rows*cols/2 (two E2M1 values a byte, low nibble first);
 *   `mxScales` Uint8Array of rows*cols/32 E8M0 exponents, one per 32 consecutive values of a row.
 *   With `mxfp4Order` "halves" (a checkpoint re-laid out by `bringup weights convert --layout
 *   halves`, formats/mxfp4-halves.ts), byte i of each block of 16 holds value HALVES_ORDER[i] in
 *   its low nibble and that value + 16 in its high one.
 */
export interface Weight {
  readonly dtype: WeightDtype;
  readonly rows: number;
  readonly cols: number;
  readonly data: Float32Array | Uint16Array | Uint8Array;
  readonly scale?: { readonly data: Float32Array; readonly blockRows: number; readonly blockCols: number };
  readonly mxScales?: Uint8Array;
  readonly mxfp4Order?: "halves";
  readonly fp8Order?: "lanes" | "quads";
  /** How an f32 weight's values lie in `data` (absent: row-major). */
  readonly layout?: "row-quads";
}

/**
 * Copies `src` into a new SharedArrayBuffer-backed array of the same kind: inside the shared
 * WebAssembly memory where there is one, so the SIMD matmul reads it in place.
 */
export function shareArray<T extends Float32Array | Uint16Array | Uint8Array>(src: T): T {
  const ctor = src.constructor as SharedArrayKind<T>;
  return shareBytes(new Uint8Array(src.buffer, src.byteOffset, src.byteLength), ctor);
}

type SharedArrayKind<T> = {
  new (buffer: ArrayBufferLike, offset?: number, length?: number): T;
  BYTES_PER_ELEMENT: number;
};

/**
 * Raw little-endian `bytes` (a checkpoint tensor as read) as a new array of `ctor`'s kind, placed
 * like shareArray's: in the shared WebAssembly memory where it fits, so the kernels read it in place.
 */
export function shareBytes<T extends Float32Array | Uint16Array | Uint8Array>(
  bytes: Uint8Array,
  ctor: SharedArrayKind<T>,
): T {
  const out = sharedArray(ctor, bytes.byteLength / ctor.BYTES_PER_ELEMENT);
  new Uint8Array(out.buffer, out.byteOffset, out.byteLength).set(bytes);
  return out;
}

/**
 * A new zeroed array of `length` elements of `ctor`'s kind where the kernels read weights in place:
 * the shared WebAssembly memory where it fits, else a SharedArrayBuffer.
 */
export function sharedArray<T extends Float32Array | Uint16Array | Uint8Array>(
  ctor: SharedArrayKind<T>,
  length: number,
): T {
  return wasmArena()?.array(ctor, length) ?? new ctor(new SharedArrayBuffer(length * ctor.BYTES_PER_ELEMENT));
}

export function sharedFloat32(length: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(length * 4));
}

/** An f32 weight over a copy of `values` (rows*cols, row-major). */
export function f32Weight(rows: number, cols: number, values: Float32Array): Weight {
  checkLength("f32", rows * cols, values.length);
  return {
    dtype: "f32",
    rows,
    cols,
    data: values.buffer instanceof SharedArrayBuffer ? values : shareArray(values),
  };
}

/** Validates that a weight's buffers match its declared shape; throws WEIGHT_SHAPE otherwise. */
export function checkWeight(w: Weight, name: string): void {
  switch (w.dtype) {
    case "f32":
    case "bf16":
    case "f16":
      checkLength(name, w.rows * w.cols, w.data.length);
      break;
    case "fp8_e4m3": {
      checkLength(name, w.rows * w.cols, w.data.length);
      // Lanes order permutes each group of 16 codes: a row must hold whole groups.
      if (w.fp8Order === "lanes" && w.cols % 16 !== 0) {
        throw new BringupError(
          "WEIGHT_SHAPE",
          `${name}: FP8 codes in lanes order need the input size to be a multiple of 16, got ${w.cols}.`,
          { subject: name },
        );
      }
      // Quads order interleaves groups of four rows by blocks of 32 codes.
      if (w.fp8Order === "quads" && (w.cols % 32 !== 0 || w.rows % 4 !== 0)) {
        throw new BringupError(
          "WEIGHT_SHAPE",
          `${name}: FP8 codes in quads order need the input size to be a multiple of 32 and the output size of 4, got [${w.rows}, ${w.cols}].`,
          { subject: name },
        );
      }
      const s = w.scale;
      if (s === undefined) break;
      const want = Math.ceil(w.rows / s.blockRows) * Math.ceil(w.cols / s.blockCols);
      checkLength(`${name} scale`, want, s.data.length);
      break;
    }
    case "mxfp4":
      if (w.cols % 32 !== 0) {
        throw new BringupError(
          "WEIGHT_SHAPE",
          `${name}: MXFP4 needs the input size to be a multiple of 32, got ${w.cols}.`,
          { subject: name },
        );
      }
      checkLength(name, (w.rows * w.cols) / 2, w.data.length);
      checkLength(`${name} scales`, (w.rows * w.cols) / 32, w.mxScales?.length ?? -1);
      break;
  }
}

function checkLength(name: string, want: number, got: number): void {
  if (want !== got) {
    throw new BringupError(
      "WEIGHT_SHAPE",
      `${name}: expected ${want} elements, found ${got}; the weights do not match the config.`,
      {
        subject: name,
      },
    );
  }
}
