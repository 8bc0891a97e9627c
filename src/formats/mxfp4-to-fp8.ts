import { BringupError } from "../common/errors.js";
import { decodeMinifloat, encodeMinifloat, FP4_E2M1, FP8_E4M3FN } from "./minifloat.js";
import { checkMxfp4Scales, MXFP4_BLOCK, MXFP4_BLOCK_BYTES } from "./mxfp4.js";
import { ALL_EXACT_SHIFT, type SimdArena, TOP_SATURATED } from "./mxfp4-fp8-simd.js";

/**
 * Re-encoding MXFP4 (E2M1 elements times an E8M0 scale per 32) as FP8 E4M3FN. Two scale layouts:
 *
 * - block32: keep each block's E8M0 scale and re-encode only the elements. E2M1 values are
 *   {0, 0.5, 1, 1.5, 2, 3, 4, 6} with signs, all exact in E4M3, so this is always exact.
 * - tile128: one power-of-two float32 scale 2^m per 128x128 tile (stored as DeepSeek-style
 *   `weight_scale_inv`, value = fp8 * scale_inv). An element e * 2^k becomes e * 2^(k - m), exact only
 *   while that stays within E4M3's range; m is chosen from the tile's largest element so nothing
 *   overflows, and tiles whose blocks span too many binades lose their smallest elements.
 */
export const TILE = 128;

/** E4M3 code of each E2M1 code: the block32 layout's element map. */
export const E2M1_TO_E4M3 = Uint8Array.from({ length: 16 }, (_, code) =>
  encodeMinifloat(FP8_E4M3FN, decodeMinifloat(FP4_E2M1, code)),
);

/** The largest binade an E4M3 value can start in (448 = 1.75 * 2^8). */
const E4M3_TOP_EXPONENT = 8;

// For an element shift d (value = e2m1 * 2^d), the E4M3 code of each nibble, or -1 where inexact.
const SHIFT_MIN = -12;
const SHIFT_MAX = 9;
const SHIFTED = (() => {
  const table = new Int16Array((SHIFT_MAX - SHIFT_MIN + 1) * 16);
  for (let d = SHIFT_MIN; d <= SHIFT_MAX; d += 1) {
    for (let nibble = 0; nibble < 16; nibble += 1) {
      const value = decodeMinifloat(FP4_E2M1, nibble) * 2 ** d;
      const code = encodeMinifloat(FP8_E4M3FN, value);
      table[(d - SHIFT_MIN) * 16 + nibble] = Object.is(decodeMinifloat(FP8_E4M3FN, code), value) ? code : -1;
    }
  }
  return table;
})();

export { ALL_EXACT_SHIFT };

/**
 * The widest span of block scale exponents (largest minus smallest) that a 128x128 tile always
 * converts exactly, whatever its elements: the tile scale follows the largest element, at most 2
 * binades above its block's scale, so every block's shift stays at or above ALL_EXACT_SHIFT.
 */
export const EXACT_SCALE_SPAN = E4M3_TOP_EXPONENT - 2 - ALL_EXACT_SHIFT;

// Per shift d >= ALL_EXACT_SHIFT, each packed byte's two E4M3 codes as one little-endian u16, so the
// hot loop does one lookup per byte.
const PAIRS = Array.from({ length: SHIFT_MAX - ALL_EXACT_SHIFT + 1 }, (_, i) => {
  const d = ALL_EXACT_SHIFT + i;
  return Uint16Array.from({ length: 256 }, (_, byte) => {
    const lo = SHIFTED[(d - SHIFT_MIN) * 16 + (byte & 15)] as number;
    const hi = SHIFTED[(d - SHIFT_MIN) * 16 + (byte >> 4)] as number;
    // Where a nibble is not exact at this shift the choice of scale rules it out; 0x7f (NaN) marks it.
    return (lo < 0 ? 0x7f : lo) | ((hi < 0 ? 0x7f : hi) << 8);
  });
});

/**
 * The u16 table for shift d >= ALL_EXACT_SHIFT. Above SHIFT_MAX only all-zero blocks can occur (any
 * non-zero element would have raised the scale), and zeros map the same at every shift.
 */
export function pairTable(d: number): Uint16Array {
  return PAIRS[Math.min(d, SHIFT_MAX) - ALL_EXACT_SHIFT] as Uint16Array;
}

/** The E4M3 code of E2M1 `nibble` times 2^d when that is exact, else -1. */
export function shiftedE4m3(nibble: number, d: number): number {
  if (d < SHIFT_MIN || d > SHIFT_MAX) return (nibble & 7) === 0 ? (E2M1_TO_E4M3[nibble] as number) : -1;
  return SHIFTED[(d - SHIFT_MIN) * 16 + nibble] as number;
}

/**
 * The E4M3 code of each of the 16 E2M1 codes at shift d, for the SIMD kernel's tables: the plain
 * path's own codes (0x7f where a nibble cannot be exact, which the scale choice rules out).
 */
export function nibbleCodes(d: number): Uint8Array {
  return Uint8Array.from({ length: 16 }, (_, nibble) => {
    const code = shiftedE4m3(nibble, d);
    return code < 0 ? 0x7f : code;
  });
}

/**
 * block32: element codes, the scales stay as they are. Always exact. With an arena holding blocks
 * and `out`, the SIMD kernel writes the codes; otherwise the plain table loop does.
 */
export function mxfp4ToFp8Block32(
  blocks: Uint8Array,
  scales: Uint8Array,
  subject?: string,
  out?: Uint8Array,
  arena?: SimdArena,
): Uint8Array {
  checkMxfp4Scales(scales, subject);
  if (blocks.length !== scales.length * MXFP4_BLOCK_BYTES) {
    throw new BringupError(
      "MXFP4_BAD_SHAPE",
      `${subject ?? "MXFP4 tensor"}: ${blocks.length} block bytes for ${scales.length} scales (16 each expected).`,
      { subject },
    );
  }
  const elements = out ?? new Uint8Array(blocks.length * 2);
  if (arena?.owns(blocks) && arena.owns(elements)) {
    arena.kernel.plain(blocks.byteOffset, elements.byteOffset, scales.length, arena.table(0));
    return elements;
  }
  const pairs = pairTable(0);
  for (let i = 0; i < blocks.length; i += 1) {
    const pair = pairs[blocks[i] as number] as number;
    elements[2 * i] = pair & 0xff;
    elements[2 * i + 1] = pair >> 8;
  }
  return elements;
}

export interface TileReport {
  /** Tiles where some element could not be exact, with the binade span of their non-zero blocks. */
  readonly inexactTiles: { row: number; col: number; blockExponentSpan: number }[];
  /** Largest absolute and relative error over inexactly encoded elements (0 when exact). */
  readonly maxAbsError: number;
  readonly maxRelError: number;
}

export interface TileResult extends TileReport {
  readonly elements: Uint8Array;
  /** float32 [ceil(rows/128), ceil(cols/128)], row-major. */
  readonly scaleInv: Float32Array;
}

/**
 * tile128 for one band of `rows` rows (at most 128 unless a multiple of it) of a [rows, cols] matrix
 * stored as MXFP4. With `allowInexact` false, inexact tiles are listed and their elements left 0:
 * the caller refuses the tensor. With it true they are rounded to nearest even and errors measured.
 */
export function mxfp4ToFp8Tile128(
  blocks: Uint8Array,
  scales: Uint8Array,
  rows: number,
  cols: number,
  allowInexact: boolean,
  subject?: string,
  firstRow = 0,
  out?: { elements: Uint8Array; scaleInv: Float32Array },
  arena?: SimdArena,
): TileResult {
  const groups = cols / MXFP4_BLOCK;
  if (!Number.isInteger(groups) || scales.length !== rows * groups || blocks.length !== scales.length * 16) {
    throw new BringupError(
      "MXFP4_BAD_SHAPE",
      `${subject ?? "MXFP4 tensor"}: ${scales.length} blocks do not form a [${rows}, ${cols}] matrix.`,
      { subject },
    );
  }
  checkMxfp4Scales(scales, subject);
  const tileRows = Math.ceil(rows / TILE);
  const tileCols = Math.ceil(cols / TILE);
  const elements = out?.elements ?? new Uint8Array(rows * cols);
  const scaleInv = out?.scaleInv ?? new Float32Array(tileRows * tileCols);
  if (arena?.owns(blocks) && arena.owns(scales) && arena.owns(elements)) {
    return {
      elements,
      scaleInv,
      ...tile128Simd(arena, blocks, scales, rows, cols, allowInexact, firstRow, elements, scaleInv),
    };
  }
  return {
    elements,
    scaleInv,
    ...tile128Plain(blocks, scales, rows, cols, allowInexact, firstRow, elements, scaleInv),
  };
}

/**
 * The SIMD path, one band of 128 rows at a time: the kernel finds each tile's largest element and
 * writes the codes; a band with a block shifted below the exact range, or a scale too large for the
 * kernel's lanes, runs on the plain path, which decides and reports what is inexact.
 */
function tile128Simd(
  arena: SimdArena,
  blocks: Uint8Array,
  scales: Uint8Array,
  rows: number,
  cols: number,
  allowInexact: boolean,
  firstRow: number,
  elements: Uint8Array,
  scaleInv: Float32Array,
): TileReport {
  const groups = cols / MXFP4_BLOCK;
  const tileCols = Math.ceil(cols / TILE);
  const work = arena.alloc(tileCols * 20);
  const lanes = work.subarray(0, tileCols * 16);
  const bias = new Int32Array(work.buffer, work.byteOffset + tileCols * 16, tileCols);
  const reports: TileReport[] = [];
  try {
    for (let r0 = 0; r0 < rows; r0 += TILE) {
      const r1 = Math.min(rows, r0 + TILE);
      const [g0, g1] = [r0 * groups, r1 * groups];
      arena.kernel.tops(
        blocks.byteOffset + g0 * MXFP4_BLOCK_BYTES,
        scales.byteOffset + g0,
        r1 - r0,
        groups,
        lanes.byteOffset,
      );
      let saturated = false;
      for (let tc = 0; tc < tileCols; tc += 1) {
        let top = 0;
        for (let i = tc * 16; i < tc * 16 + 16; i += 1) top = Math.max(top, lanes[i] as number);
        saturated ||= top === TOP_SATURATED;
        // A lane's value is scale code + 2 + binade of its top element, which lands in E4M3's top
        // binade; a tile of zero blocks keeps scale 1.
        const m = top === 0 ? 0 : top - 2 - 127 - E4M3_TOP_EXPONENT;
        scaleInv[(r0 / TILE) * tileCols + tc] = 2 ** m;
        bias[tc] = m + 127;
      }
      const low = saturated
        ? 1
        : arena.kernel.shifted(
            blocks.byteOffset + g0 * MXFP4_BLOCK_BYTES,
            scales.byteOffset + g0,
            elements.byteOffset + r0 * cols,
            r1 - r0,
            groups,
            bias.byteOffset,
            arena.tables,
          );
      if (low > 0) {
        reports.push(
          tile128Plain(
            blocks.subarray(g0 * MXFP4_BLOCK_BYTES, g1 * MXFP4_BLOCK_BYTES),
            scales.subarray(g0, g1),
            r1 - r0,
            cols,
            allowInexact,
            firstRow + r0,
            elements.subarray(r0 * cols, r1 * cols),
            scaleInv.subarray((r0 / TILE) * tileCols, (r0 / TILE + 1) * tileCols),
          ),
        );
      }
    }
  } finally {
    arena.release(work);
  }
  return {
    inexactTiles: reports.flatMap((r) => r.inexactTiles),
    maxAbsError: Math.max(0, ...reports.map((r) => r.maxAbsError)),
    maxRelError: Math.max(0, ...reports.map((r) => r.maxRelError)),
  };
}

/** The plain path: table lookups per block, and per element where a shift can be inexact. */
function tile128Plain(
  blocks: Uint8Array,
  scales: Uint8Array,
  rows: number,
  cols: number,
  allowInexact: boolean,
  firstRow: number,
  elements: Uint8Array,
  scaleInv: Float32Array,
): TileReport {
  const groups = cols / MXFP4_BLOCK;
  const tileRows = Math.ceil(rows / TILE);
  const tileCols = Math.ceil(cols / TILE);
  const blocksPerTile = TILE / MXFP4_BLOCK;
  const pairsOut = new Uint16Array(elements.buffer, elements.byteOffset, elements.length / 2);
  const inexactTiles: TileReport["inexactTiles"] = [];
  let maxAbsError = 0;
  let maxRelError = 0;

  // Largest element binade per block (blocks of all zeros: -Infinity). A magnitude code's binade is
  // (code >> 1) - 1: 4 and 6 (codes 6, 7) have bits 2 and 1 set, 2 and 3 (codes 4, 5) only bit 2,
  // 1 and 1.5 (codes 2, 3) bit 1, 0.5 (code 1) bit 0. So a block's top binade follows from a few
  // bitwise ORs over its four 32-bit words, one pass instead of 32 comparisons.
  const aligned = blocks.byteOffset % 4 === 0 ? blocks : blocks.slice();
  const words = new Uint32Array(aligned.buffer, aligned.byteOffset, aligned.length / 4);
  const top = new Float64Array(scales.length);
  for (let b = 0; b < scales.length; b += 1) {
    const w0 = words[4 * b] as number;
    const w1 = words[4 * b + 1] as number;
    const w2 = words[4 * b + 2] as number;
    const w3 = words[4 * b + 3] as number;
    const any = w0 | w1 | w2 | w3;
    const both = (w0 & (w0 << 1)) | (w1 & (w1 << 1)) | (w2 & (w2 << 1)) | (w3 & (w3 << 1));
    const binade =
      both & 0x44444444
        ? 2
        : any & 0x44444444
          ? 1
          : any & 0x22222222
            ? 0
            : any & 0x11111111
              ? -1
              : Number.NEGATIVE_INFINITY;
    top[b] = binade + (scales[b] as number) - 127;
  }

  for (let tr = 0; tr < tileRows; tr += 1) {
    const r0 = tr * TILE;
    const r1 = Math.min(rows, r0 + TILE);
    for (let tc = 0; tc < tileCols; tc += 1) {
      const g0 = tc * blocksPerTile;
      const g1 = Math.min(groups, g0 + blocksPerTile);
      let pMax = Number.NEGATIVE_INFINITY;
      let kMin = Number.POSITIVE_INFINITY;
      let kMax = Number.NEGATIVE_INFINITY;
      for (let r = r0; r < r1; r += 1) {
        for (let g = g0; g < g1; g += 1) {
          const b = r * groups + g;
          const t = top[b] as number;
          if (t === Number.NEGATIVE_INFINITY) continue; // all-zero blocks do not constrain the scale
          pMax = Math.max(pMax, t);
          const k = (scales[b] as number) - 127;
          kMin = Math.min(kMin, k);
          kMax = Math.max(kMax, k);
        }
      }
      const m = pMax === Number.NEGATIVE_INFINITY ? 0 : pMax - E4M3_TOP_EXPONENT;
      const scale = 2 ** m;
      scaleInv[tr * tileCols + tc] = scale;
      let tileExact = true;
      for (let r = r0; r < r1; r += 1) {
        for (let g = g0; g < g1; g += 1) {
          const b = r * groups + g;
          const d = (scales[b] as number) - 127 - m;
          const outBase = r * cols + g * MXFP4_BLOCK;
          if (d >= ALL_EXACT_SHIFT) {
            const pairs = pairTable(d);
            const inBase = b * MXFP4_BLOCK_BYTES;
            const outPair = outBase >> 1;
            for (let j = 0; j < MXFP4_BLOCK_BYTES; j += 1) {
              pairsOut[outPair + j] = pairs[blocks[inBase + j] as number] as number;
            }
            continue;
          }
          for (let j = 0; j < MXFP4_BLOCK_BYTES; j += 1) {
            const byte = blocks[b * MXFP4_BLOCK_BYTES + j] as number;
            for (let half = 0; half < 2; half += 1) {
              const nibble = half === 0 ? byte & 15 : byte >> 4;
              const code = shiftedE4m3(nibble, d);
              if (code >= 0) {
                elements[outBase + 2 * j + half] = code;
                continue;
              }
              tileExact = false;
              if (!allowInexact) {
                elements[outBase + 2 * j + half] = 0; // the caller refuses the tensor; keep the bytes defined
                continue;
              }
              const value = decodeMinifloat(FP4_E2M1, nibble) * 2 ** d;
              const rounded = encodeMinifloat(FP8_E4M3FN, value, { saturate: true });
              elements[outBase + 2 * j + half] = rounded;
              const error = Math.abs(decodeMinifloat(FP8_E4M3FN, rounded) - value) * scale;
              maxAbsError = Math.max(maxAbsError, error);
              maxRelError = Math.max(maxRelError, error / Math.abs(value * scale));
            }
          }
        }
      }
      if (!tileExact) {
        inexactTiles.push({ row: firstRow + r0, col: tc * TILE, blockExponentSpan: kMax - kMin });
      }
    }
  }
  return { inexactTiles, maxAbsError, maxRelError };
}
