import { describe, expect, it } from "vitest";
import { SimdDecoder } from "./decode-simd.js";
import { decodeE8m0 } from "./e8m0.js";
import { decodeMinifloat, FP4_E2M1, FP8_E4M3FN } from "./minifloat.js";

/** Float32 bits of each value, NaNs as one pattern: the decoders promise values, not NaN payloads. */
function bits(values: ArrayLike<number>): Uint32Array {
  const out = new Uint32Array(Float32Array.from(values).buffer);
  for (let i = 0; i < values.length; i += 1) if (Number.isNaN(values[i])) out[i] = 0x7fc00000;
  return out;
}

function expectSameBits(actual: Float32Array, expected: readonly number[]): void {
  const [a, b] = [bits(actual), bits(expected)];
  const first = a.findIndex((x, i) => x !== b[i]);
  expect(first === -1 ? "all equal" : `element ${first}: ${actual[first]} vs ${expected[first]}`).toBe(
    "all equal",
  );
}

describe.each([false, true])("SIMD decoders, relaxed swizzle %s", (relaxed) => {
  const decoder = SimdDecoder.create(relaxed) as SimdDecoder;

  it("compile on this Node", () => {
    expect(decoder).toBeInstanceOf(SimdDecoder);
    expect(decoder.relaxed).toBe(relaxed); // Node 20 has relaxed SIMD behind a flag the runtime sets
  });

  it("MXFP4: every packed byte under every finite scale, as the E2M1 and E8M0 definitions give", () => {
    // 16 blocks per scale hold all 256 bytes; 255 scales make 4080 blocks, several slices.
    const scales = Uint8Array.from({ length: 255 * 16 }, (_, b) => b >> 4);
    const blocks = Uint8Array.from({ length: scales.length * 16 }, (_, i) => i & 255);
    const out = new Float32Array(scales.length * 32).fill(Number.NaN);
    decoder.mxfp4(blocks, scales, out);
    const expected = Array.from(out, (_, e) => {
      const byte = blocks[e >> 1] as number;
      const nibble = e & 1 ? byte >> 4 : byte & 15; // low nibble first
      return Math.fround(decodeMinifloat(FP4_E2M1, nibble) * decodeE8m0(scales[e >> 5] as number));
    });
    expectSameBits(out, expected);
  });

  // Scales: powers of two, ordinary ones, one that makes subnormal float32s, one that overflows.
  const SCALES = [1, 2 ** -20, 2 ** 30, 0.1, 3.7e-3, 1.3e-41, 5e36, Number.NaN];

  /** Rows of `cols` codes read into a decoder's space; row r's runs take scales from index r * runs. */
  const fp8Case = (rows: number, cols: number, blockCols: number) => {
    const count = rows * cols;
    const runs = Math.ceil(cols / blockCols);
    const codes = Uint8Array.from({ length: count }, (_, i) => (i * 37 + (i >> 8)) & 255);
    const scales = Float32Array.from({ length: rows * runs }, (_, k) => SCALES[k % SCALES.length] as number);
    const space = decoder.space(scales.byteLength, count, count);
    space.codes.set(codes);
    space.scales.set(new Uint8Array(scales.buffer));
    space.values.fill(-1);
    for (let r = 0; r < rows; r += 1) space.fp8Row(r * cols, cols, blockCols, r * runs);
    const expected = Array.from(codes, (code, i) => {
      const [r, c] = [Math.floor(i / cols), i % cols];
      return Math.fround(
        decodeMinifloat(FP8_E4M3FN, code) * (scales[r * runs + Math.floor(c / blockCols)] as number),
      );
    });
    expectSameBits(space.values, expected);
  };

  it("FP8 E4M3: every code in runs of 16, 32 and 128 under each scale, with a partial last run", () => {
    for (const blockCols of [16, 32, 128]) fp8Case(1, 256 * 8 * SCALES.length + 48, blockCols);
  });

  it("FP8 E4M3: rows at offsets, each with its own scales, and runs longer than a row", () => {
    fp8Case(7, 144, 128);
    fp8Case(3, 4000, 32);
    fp8Case(2, 96, 128);
  });

  it("a space handed out again may move, and decodes the same", () => {
    const small = decoder.space(4, 16, 16);
    small.codes.set(new Uint8Array(16).fill(0x38)); // 1.0
    new Float32Array(small.scales.buffer, small.scales.byteOffset, 1)[0] = 3;
    small.fp8Row(0, 16, 16, 0);
    expect(Array.from(small.values)).toEqual(new Array(16).fill(3));
    fp8Case(1, 2 ** 20, 128); // grows the memory
  });
});
