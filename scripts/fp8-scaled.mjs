// matmul/fp8-rows.wat's ".scaled" text (the `fp8=scaled` switch; not the same bits as the exact
// fp8): its fp8 multiplies each weight's code, decoded as value·2^-120, by an input that already
// holds x times the weight's scale·2^64 (fp8-rows.wat's scaleInput makes it, once per band of rows
// that share their scales: 128x128 tiles), so no multiply by a scale per weight; each row's lane
// sums are multiplied by 2^56 at the end (2^-120 · 2^64 · 2^56 = 1, exact). decode and scaleInput
// are left as they are. Refused when the text has nothing to rewrite. Used by build-kernels.mjs.
import { rewriteWat } from "./wat-rewrites.mjs";

const FP8 = '(func (export "fp8")';
const SUMS = ";; (l0 + l1) + (l2 + l3)";
const SCALE_SPLAT =
  /\n\s*\(local\.set \$scale \(v128\.load32_splat \(i32\.add \(local\.get \$sp\d\) \(local\.get \$sOff\)\)\)\)/g;
const TIMES_SCALE = /\n\s*\(local\.set \$w\d \(f32x4\.mul \(local\.get \$w\d\) \(local\.get \$scale\)\)\)/g;

/** `text` (fp8-rows.wat's, any of its builds) with its fp8 taking a scaled input; `file` names it in errors. */
export function scaledText(file, text) {
  const at = text.indexOf(FP8);
  const end = text.indexOf(SUMS, at);
  if (at < 0 || end < 0) throw new Error(`${file}: its ".scaled" build finds no fp8 sums`);
  const body = rewriteWat(file, ".scaled", text.slice(at, end), [
    [SCALE_SPLAT, ""],
    [TIMES_SCALE, ""],
  ]);
  const scaleBack = [0, 1, 2, 3]
    .map(
      (r) =>
        `(local.set $a${r} (f32x4.mul (local.get $a${r}) (v128.const f32x4 0x1p56 0x1p56 0x1p56 0x1p56)))\n        `,
    )
    .join("");
  return text.slice(0, at) + body + scaleBack + text.slice(end);
}
