/**
 * WebAssembly SIMD decoders from MXFP4 and scaled FP8 E4M3 to float32, for reading and verifying
 * weights: the scalar loops run at 5-8 ns an element here, which made proving a converted
 * checkpoint exact take several times longer than converting it.
 *
 * Both produce exactly what the scalar decoders do. Each element is a product of two float32
 * values (an element and its block's scale) that float64 holds exactly, so the scalar path's one
 * rounding to float32 is the one f32x4.mul makes. MXFP4: a nibble's float32 bits have only their top
 * two bytes set, which two 16-entry swizzle tables give (built from the E2M1 decode table).
 * E4M3: a value also has only the top 16 bits of its float32 set; for a normal code they are its
 * low 7 bits shifted under the sign plus the exponent bias difference, for a subnormal they come
 * from a table. No element is a float32 subnormal operand, only a rare tiny scale can be: x86 takes
 * a slow microcode path on those, which made a first version of this decoder 2.6x slower here.
 * 0x7f and 0xff become NaN.
 *
 * Bytes are read into a decoder's memory and decoded there (DecodeSpace), or copied through it a
 * slice at a time. The kernels are WebAssembly text in wasm/decode.wat.
 */

import { compileSwizzleKernel } from "../common/built-wasm.js";
import {
  instantiateWasm,
  type WasmApi,
  type WasmModule,
  type WasmUnsharedMemory,
  wasmApi,
} from "../common/wasm-runtime.js";
import { e8m0Table } from "./e8m0.js";

interface DecodeExports {
  mxfp4(blocks: number, scales: number, out: number, n: number, factors: number): void;
  fp8(codes: number, out: number, count: number, blockCols: number, scales: number): void;
}

/** Elements dequantizeMxfp4 decodes per kernel call, copying through: the slice stays in cache. */
const SLICE = 32 * 1024;
const PAGE = 65536;
const ALIGN = 64;
const FACTORS = 0;
const roundUp = (n: number) => Math.ceil(n / ALIGN) * ALIGN;

/**
 * Views of a decoder's memory to read quantized bytes into and decode them in place, valid until
 * the decoder's next `space`: `scales` (MXFP4's E8M0 codes, or FP8's float32 scales as stored),
 * `codes` (MXFP4 blocks or FP8 codes) and `values`.
 */
export interface DecodeSpace {
  readonly scales: Uint8Array;
  readonly codes: Uint8Array;
  readonly values: Float32Array;
  /** The first `blocks` MXFP4 blocks in `codes`, under the scales in `scales`, into `values`. */
  mxfp4(blocks: number): void;
  /**
   * One row of `cols` FP8 codes from element `at` of `codes` into the same place in `values`, the
   * k-th run of `blockCols` times float32 number `scale + k` of `scales`. See fp8Fits.
   */
  fp8Row(at: number, cols: number, blockCols: number, scale: number): void;
}

/**
 * A decoder and its memory (not shared: copies in and out of a shared one go element by element,
 * and took longer than decoding). Layout: the E8M0 factors (256 float32), then the scales, codes
 * and values areas, grown as asked.
 */
export class SimdDecoder {
  readonly #kernel: DecodeExports;
  readonly #memory: WasmUnsharedMemory;

  private constructor(
    module: WasmModule,
    /** Whether the MXFP4 lookups use relaxed SIMD's swizzle. */
    readonly relaxed: boolean,
  ) {
    this.#memory = new (wasmApi as WasmApi).Memory({ initial: 1, maximum: 65536 });
    this.#kernel = instantiateWasm(module, this.#memory) as DecodeExports;
    new Float32Array(this.#memory.buffer, FACTORS, 256).set(e8m0Table());
  }

  /**
   * A decoder, or undefined where WebAssembly SIMD is unavailable. It uses relaxed SIMD's swizzle
   * (without the plain one's range fix-up; it differs only for indices of 16 and up, which the
   * MXFP4 lookups never use and the FP8 one discards) where the runtime has it, unless `relaxed` is
   * false.
   */
  static create(relaxed = true): SimdDecoder | undefined {
    const kernel = compileSwizzleKernel(
      new URL("./wasm/decode.wasm", import.meta.url),
      "FORMATS_KERNELS_NOT_BUILT",
      relaxed,
    );
    return kernel === undefined ? undefined : new SimdDecoder(kernel.module, kernel.relaxed);
  }

  /** Room for `scaleBytes`, `codeBytes` and `values` floats; earlier views of the memory may go stale. */
  space(scaleBytes: number, codeBytes: number, values: number): DecodeSpace {
    const scalesAt = roundUp(FACTORS + 1024);
    const codesAt = roundUp(scalesAt + scaleBytes);
    const valuesAt = roundUp(codesAt + codeBytes);
    const top = valuesAt + 4 * values;
    const length = this.#memory.buffer.byteLength;
    if (top > length) this.#memory.grow(Math.ceil((top - length) / PAGE));
    const buffer = this.#memory.buffer;
    return {
      scales: new Uint8Array(buffer, scalesAt, scaleBytes),
      codes: new Uint8Array(buffer, codesAt, codeBytes),
      values: new Float32Array(buffer, valuesAt, values),
      mxfp4: (blocks) => this.#kernel.mxfp4(codesAt, scalesAt, valuesAt, blocks, FACTORS),
      fp8Row: (at, cols, blockCols, scale) =>
        this.#kernel.fp8(codesAt + at, valuesAt + 4 * at, cols, blockCols, scalesAt + 4 * scale),
    };
  }

  /** MXFP4 blocks (16 bytes each) and their scales to float32 in `out`, 32 per block. */
  mxfp4(blocks: Uint8Array, scales: Uint8Array, out: Float32Array): void {
    const step = SLICE / 32;
    const space = this.space(step, step * 16, SLICE);
    for (let b0 = 0; b0 < scales.length; b0 += step) {
      const n = Math.min(step, scales.length - b0);
      space.codes.set(blocks.subarray(b0 * 16, (b0 + n) * 16));
      space.scales.set(scales.subarray(b0, b0 + n));
      space.mxfp4(n);
      out.set(space.values.subarray(0, n * 32), b0 * 32);
    }
  }
}

/** Whether rows of `cols` codes in runs of `blockCols` suit DecodeSpace.fp8Row. */
export function fp8Fits(cols: number, blockCols: number): boolean {
  return cols % 16 === 0 && blockCols % 16 === 0;
}

let threadDecoder: SimdDecoder | null | undefined;

/** This thread's decoder for dequantizeMxfp4, or undefined where WebAssembly SIMD is unavailable. */
export function simdDecoder(): SimdDecoder | undefined {
  threadDecoder ??= SimdDecoder.create() ?? null;
  return threadDecoder ?? undefined;
}
