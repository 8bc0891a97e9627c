import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeMinifloat, encodeMinifloat, FP4_E2M1, FP8_E4M3FN } from "./minifloat.js";
import { dequantizeMxfp4 } from "./mxfp4.js";
import {
  ALL_EXACT_SHIFT,
  E2M1_TO_E4M3,
  mxfp4ToFp8Block32,
  mxfp4ToFp8Tile128,
  pairTable,
  shiftedE4m3,
} from "./mxfp4-to-fp8.js";

/** Whether E4M3FN holds `value` exactly, by encoding and decoding it. */
function e4m3Holds(value: number): boolean {
  return Object.is(decodeMinifloat(FP8_E4M3FN, encodeMinifloat(FP8_E4M3FN, value)), value);
}
const MAGNITUDES = [0.5, 1, 1.5, 2, 3, 4, 6];

describe("facts the FP8 layouts rely on, checked by enumeration", () => {
  it("every E2M1 value is an E4M3 value, so keeping the per-32 E8M0 scales is always exact", () => {
    for (let code = 0; code < 16; code += 1) {
      expect(decodeMinifloat(FP8_E4M3FN, E2M1_TO_E4M3[code] as number)).toBe(decodeMinifloat(FP4_E2M1, code));
    }
  });

  it("with one scale 2^m, m = k_max - 6, a tile is exact exactly when its block exponents span at most 14", () => {
    // A block with exponent k holds e * 2^(k - m); enumerate every magnitude at every offset.
    const exactOffsets = [];
    for (let d = -20; d <= 12; d += 1)
      if (MAGNITUDES.every((e) => e4m3Holds(e * 2 ** d))) exactOffsets.push(d);
    expect(exactOffsets).toEqual(Array.from({ length: 15 }, (_, i) => i - 8)); // d in [-8, 6]
    // With m = k_max - 6, the top block has d = 6 and a block at spread s has d = 6 - s.
    const spreads = [];
    for (let s = 0; s <= 20; s += 1)
      if (MAGNITUDES.every((e) => e4m3Holds(e * 2 ** (6 - s)))) spreads.push(s);
    expect(Math.max(...spreads)).toBe(14);
    expect(e4m3Holds(6 * 2 ** 7)).toBe(false); // m cannot be lower: 6 * 2^7 = 768 > 448
  });

  it("every packed byte's pair of codes is exact at every shift the fast path uses", () => {
    for (let d = ALL_EXACT_SHIFT; d <= 12; d += 1) {
      for (let byte = 0; byte < 256; byte += 1) {
        const pair = pairTable(d)[byte] as number;
        for (const [nibble, code] of [
          [byte & 15, pair & 0xff],
          [byte >> 4, pair >> 8],
        ] as const) {
          const value = decodeMinifloat(FP4_E2M1, nibble) * 2 ** d;
          // Nibbles too large for the shift never meet it (the scale prevents that); all others are exact.
          if (Math.abs(value) <= 448 && d <= 9) expect(decodeMinifloat(FP8_E4M3FN, code)).toBe(value);
          if (d > 9 && (nibble & 7) === 0) expect(decodeMinifloat(FP8_E4M3FN, code)).toBe(value);
        }
      }
    }
    expect(ALL_EXACT_SHIFT).toBe(-8); // matches the enumeration above: d in [-8, 6] holds every magnitude
  });

  it("the shift table agrees with encoding and decoding for every nibble and offset", () => {
    for (let d = -30; d <= 12; d += 1) {
      for (let nibble = 0; nibble < 16; nibble += 1) {
        const value = decodeMinifloat(FP4_E2M1, nibble) * 2 ** d;
        const code = shiftedE4m3(nibble, d);
        if (e4m3Holds(value)) expect(decodeMinifloat(FP8_E4M3FN, code)).toBe(value);
        else expect(code).toBe(-1);
      }
    }
  });
});

function matrix(rows: number, cols: number, scaleOf: (r: number, g: number) => number, seed: number) {
  const groups = cols / 32;
  const scales = new Uint8Array(rows * groups);
  const blocks = new Uint8Array(rows * groups * 16);
  let x = seed;
  for (let r = 0; r < rows; r += 1)
    for (let g = 0; g < groups; g += 1) scales[r * groups + g] = scaleOf(r, g);
  for (let i = 0; i < blocks.length; i += 1) {
    x = (x * 1103515245 + 12345) >>> 0;
    blocks[i] = x >>> 24;
  }
  return { blocks, scales };
}

function decodeTiles(elements: Uint8Array, scaleInv: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  const tileCols = Math.ceil(cols / 128);
  for (let r = 0; r < rows; r += 1) {
    for (let c = 0; c < cols; c += 1) {
      const s = scaleInv[Math.floor(r / 128) * tileCols + Math.floor(c / 128)] as number;
      out[r * cols + c] = decodeMinifloat(FP8_E4M3FN, elements[r * cols + c] as number) * s;
    }
  }
  return out;
}

describe("MXFP4 to FP8", () => {
  it("block32 decodes bit for bit to the source values", () => {
    const { blocks, scales } = matrix(4, 64, (r, g) => 100 + r * 3 + g, 7);
    const codes = mxfp4ToFp8Block32(blocks, scales);
    const source = dequantizeMxfp4(blocks, scales);
    for (let i = 0; i < source.length; i += 1) {
      const s = 2 ** ((scales[Math.floor(i / 32)] as number) - 127);
      expect(decodeMinifloat(FP8_E4M3FN, codes[i] as number) * s).toBe(source[i]);
    }
  });

  it("tile128 is bit-exact when every tile spans at most 14 binades, with partial edge tiles", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer(),
        (rows, g, seed) => {
          const cols = g * 32;
          const { blocks, scales } = matrix(
            rows,
            cols,
            (r, gg) => 110 + (((r * 7 + gg * 3 + seed) & 15) % 15),
            seed,
          );
          const result = mxfp4ToFp8Tile128(blocks, scales, rows, cols, false);
          const back = decodeTiles(result.elements, result.scaleInv, rows, cols);
          const source = dequantizeMxfp4(blocks, scales);
          return result.inexactTiles.length === 0 && back.every((v, i) => Object.is(v, source[i]));
        },
      ),
      { numRuns: 60 },
    );
  });

  it("names tiles whose span is too wide, and measures the error only when allowed", () => {
    const { blocks, scales } = matrix(128, 256, (r, g) => (r === 0 && g === 0 ? 136 : 120), 3);
    // Block 0 holds only 0.5s at 2^9: its block exponent is 16 above the rest, yet its largest
    // element is only 2^8, so the scale follows the elements and the tile stays exact.
    blocks.fill(0x11, 0, 16);
    const exact = mxfp4ToFp8Tile128(blocks, scales, 128, 256, false, "w");
    expect(exact.inexactTiles).toEqual([]);
    expect(Array.from(exact.scaleInv)).toEqual([1, 2 ** -13]); // second tile: top element 6 * 2^-7, so m = 2 - 7 - 8
    scales[0] = 150; // now block 0 sits 30 binades above the rest of its tile
    const inexact = mxfp4ToFp8Tile128(blocks, scales, 128, 256, false, "w");
    expect(inexact.inexactTiles).toEqual([{ row: 0, col: 0, blockExponentSpan: 30 }]);
    expect(inexact.maxAbsError).toBe(0);
    const allowed = mxfp4ToFp8Tile128(blocks, scales, 128, 256, true, "w");
    expect(allowed.maxAbsError).toBeGreaterThan(0);
    expect(allowed.maxRelError).toBe(1); // the smallest elements flush to zero
  });

  it("picks the tile scale from the largest element of any magnitude code", () => {
    // One block at scale 2^0 whose largest element is each E2M1 magnitude in turn: m = binade - 8.
    const binades = [-1, 0, 0, 1, 1, 2, 2];
    for (let code = 1; code <= 7; code += 1) {
      const blocks = new Uint8Array(16);
      blocks[9] = (code << 4) | 1; // a 0.5 beside it, and a negative copy elsewhere
      blocks[3] = 8 | code;
      const { scaleInv, inexactTiles } = mxfp4ToFp8Tile128(blocks, new Uint8Array([127]), 1, 32, false);
      expect([code, scaleInv[0]]).toEqual([code, 2 ** ((binades[code - 1] as number) - 8)]);
      expect(inexactTiles).toEqual([]);
    }
  });

  it("refuses NaN scales and mismatched shapes", () => {
    const { blocks, scales } = matrix(2, 32, () => 255, 1);
    expect(() => mxfp4ToFp8Tile128(blocks, scales, 2, 32, false, "w")).toThrow(/NaN scale/);
    expect(() => mxfp4ToFp8Block32(blocks, scales, "w")).toThrow(/NaN scale/);
    expect(() => mxfp4ToFp8Tile128(blocks, scales, 3, 32, false, "w")).toThrow(/do not form/);
  });
});
