// matmul/fp8-rows.wat's ".lanes" text, for codes in formats/fp8-lanes.ts's order (byte 4i + r of
// each 16 holds code 4·[0, 2, 1, 3][r] + i): each swizzle putting codes 0-7 in the words' high bytes
// becomes the same 16 bytes loaded again one byte lower (each word's high byte then holds the even
// byte that was below it: codes l and 4 + l of lane l; the byte read before them falls below the
// mask, as the low byte of each word does), each putting codes 8-15 there becomes the codes as
// they are (the odd bytes: 8 + l and 12 + l), and the NaN masks spread each lane's bytes (4l,
// 4l + 2, 4l + 1, 4l + 3) instead of four consecutive ones. A load in place of a 16-bit shift left
// by 8: on Intel cores vector shifts share ports 0 and 1 with the multiply-adds. Refused when the
// text has none of them, or when a swizzled local's pointer changes between its load and the
// swizzle. Used by build-kernels.mjs and bench/kernel-before-after.ts.
import { rewriteWat } from "./wat-rewrites.mjs";

const LOW_CODES =
  /\(i8x16\.swizzle \(local\.get \$(\w+)\)\s+\(v128\.const i8x16 128 0 128 4 128 1 128 5 128 2 128 6 128 3 128 7\)\)/g;
const HIGH_CODES =
  /\(i8x16\.swizzle (\(local\.get \$\w+\))\s+\(v128\.const i8x16 128 8 128 12 128 9 128 13 128 10 128 14 128 11 128 15\)\)/g;
const NAN_SPREAD = /\(i8x16\.shuffle (0|4|8|12) \1 \1 \1 (\d+) \2 \2 \2 (\d+) \3 \3 \3 (\d+) \4 \4 \4 /g;
/** A v128 local loaded from a pointer local plus an offset. */
const CODES_LOAD = /\(local\.set \$(\w+) \(v128\.load(?: offset=(\d+))? \(local\.get \$(\w+)\)\)\)/g;
/** The byte of lane 0 holding the first of four consecutive codes 0, 4, 8, 12 in lanes order. */
const LANE_BYTE = { 0: 0, 4: 2, 8: 1, 12: 3 };

/**
 * The load, one byte lower, of the 16 codes local `codes` holds at `at` in `text`: its last load
 * before `at`, whose pointer must not be set between that load and `at`.
 */
function loadOneLower(file, text, codes, at) {
  const loads = [...text.slice(0, at).matchAll(CODES_LOAD)].filter((m) => m[1] === codes);
  const load = loads.at(-1);
  if (load === undefined) throw new Error(`${file}: its ".lanes" build finds no load of $${codes}`);
  const [, , offset = "0", pointer] = load;
  if (new RegExp(`\\(local\\.(set|tee) \\$${pointer}\\b`).test(text.slice(load.index, at)))
    throw new Error(
      `${file}: its ".lanes" build finds $${pointer} set between $${codes}'s load and its swizzle`,
    );
  return `(v128.load offset=${offset} (i32.sub (local.get $${pointer}) (i32.const 1)))`;
}

/** `text` reading codes in lanes order; `file` names it in the error when it has nothing to rewrite. */
export function lanesText(file, text) {
  return rewriteWat(file, ".lanes", text, [
    [LOW_CODES, (_, codes, at, whole) => loadOneLower(file, whole, codes, at)],
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
