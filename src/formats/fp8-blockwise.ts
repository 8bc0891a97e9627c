import { encodeMinifloat, FP8_E4M3FN, maxFinite } from "./minifloat.js";
import { TILE } from "./mxfp4-to-fp8.js";

const E4M3_MAX = maxFinite(FP8_E4M3FN);

/**
 * Quantizes a [rows, cols] float matrix to FP8 E4M3 with one float32 scale per 128x128 tile, the way
 * DeepSeek-style FP8 checkpoints are made: scale_inv = amax / 448 (in float32), element =
 * e4m3(value / scale_inv) rounded to nearest even against that stored scale_inv, saturating. An all-zero tile gets scale_inv 1.
 * NaN stays NaN and infinities saturate to ±448 * scale_inv; neither counts toward amax.
 */
export function floatToFp8Tile128(
  values: Float32Array,
  rows: number,
  cols: number,
  out?: { elements: Uint8Array; scaleInv: Float32Array },
): { elements: Uint8Array; scaleInv: Float32Array } {
  const tileRows = Math.ceil(rows / TILE);
  const tileCols = Math.ceil(cols / TILE);
  const elements = out?.elements ?? new Uint8Array(rows * cols);
  const scaleInv = out?.scaleInv ?? new Float32Array(tileRows * tileCols);
  for (let tr = 0; tr < tileRows; tr += 1) {
    const r1 = Math.min(rows, (tr + 1) * TILE);
    for (let tc = 0; tc < tileCols; tc += 1) {
      const c0 = tc * TILE;
      const c1 = Math.min(cols, c0 + TILE);
      let amax = 0;
      for (let r = tr * TILE; r < r1; r += 1) {
        for (let c = c0; c < c1; c += 1) {
          const magnitude = Math.abs(values[r * cols + c] as number);
          // A NaN or infinity (callers refuse them unless allowed) must not spoil the tile's scale.
          if (magnitude < Number.POSITIVE_INFINITY) amax = Math.max(amax, magnitude);
        }
      }
      const scale = amax === 0 ? 1 : Math.fround(amax / E4M3_MAX);
      scaleInv[tr * tileCols + tc] = scale;
      for (let r = tr * TILE; r < r1; r += 1) {
        for (let c = c0; c < c1; c += 1) {
          // Rounded once, to nearest even, against the scale stored. The float64 quotient of two
          // float32 values is never a tie unless the exact one is (a tie has 5 significant bits, and
          // the exact quotient is that or at least 2^-48 of it away), where rounding it to float32
          // first could land on a tie and round the wrong way.
          const q = (values[r * cols + c] as number) / scale;
          elements[r * cols + c] = encodeMinifloat(FP8_E4M3FN, q, { saturate: true });
        }
      }
    }
  }
  return { elements, scaleInv };
}
