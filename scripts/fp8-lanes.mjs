// matmul/fp8-rows.wat's ".lanes" text, for codes in formats/fp8-lanes.ts's order (byte 4i + r of
// each 16 holds code 4·[0, 2, 1, 3][r] + i): each swizzle putting codes 0-7 in the words' high bytes
// becomes one 16-bit shift left by 8 (the even bytes: codes l and 4 + l of lane l), each putting
// codes 8-15 there becomes the codes as they are (the odd bytes: 8 + l and 12 + l; the low byte's
// bits fall below the mask), and the NaN masks spread each lane's bytes (4l, 4l + 2, 4l + 1,
// 4l + 3) instead of four consecutive ones. Refused when the text has none of them. Used by
// build-kernels.mjs and bench/kernel-before-after.ts.
import { rewriteWat } from "./wat-rewrites.mjs";

const LOW_CODES =
  /\(i8x16\.swizzle (\(local\.get \$\w+\))\s+\(v128\.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7\)\)/g;
const HIGH_CODES =
  /\(i8x16\.swizzle (\(local\.get \$\w+\))\s+\(v128\.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15\)\)/g;
const NAN_SPREAD = /\(i8x16\.shuffle (0|4|8|12) \1 \1 \1 (\d+) \2 \2 \2 (\d+) \3 \3 \3 (\d+) \4 \4 \4 /g;
/** The byte of lane 0 holding the first of four consecutive codes 0, 4, 8, 12 in lanes order. */
const LANE_BYTE = { 0: 0, 4: 2, 8: 1, 12: 3 };

/** `text` reading codes in lanes order; `file` names it in the error when it has nothing to rewrite. */
export function lanesText(file, text) {
  return rewriteWat(file, ".lanes", text, [
    [LOW_CODES, "(i16x8.shl $1 (i32.const 8))"],
    [HIGH_CODES, "$1"],
    [
      NAN_SPREAD,
      (_, first) => {
        const bytes = [0, 4, 8, 12].map((l) => LANE_BYTE[first] + l);
        return `(i8x16.shuffle ${bytes.map((b) => `${b} ${b} ${b} ${b} `).join("")}`;
      },
    ],
  ]);
}
