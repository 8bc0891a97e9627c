// matmul/fp8-rows.wat's ".scaled" text (the `fp8=scaled` switch; not the same bits as the exact
// fp8): its fp8 multiplies each weight's code, decoded as value·2^-120, by an input that already
// holds x times the weight's scale·2^64 (fp8-rows.wat's scaleInput makes it, once per band of rows
// that share their scales: 128x128 tiles), so no multiply by a scale per weight; each row's lane
// sums are multiplied by 2^56 at the end (2^-120 · 2^64 · 2^56 = 1, exact). Each row also sums
// its blocks' second halves in accumulators of their own ($b0-$b3, stored at acc + 64), added to
// the first halves' at the end: eight chains of multiply-adds in flight, not four, so a chain's
// latency (four cycles a multiply-add) no longer bounds the rows once the scale multiplies are
// gone. decode and scaleInput are left as they are. Refused when the text has nothing to rewrite.
// Used by build-kernels.mjs.
import { rewriteWat } from "./wat-rewrites.mjs";

const FP8 = '(func (export "fp8")';
const SECOND_HALF = ";; Second half";
const SUMS = ";; (l0 + l1) + (l2 + l3)";
const SCALE_SPLAT =
  /\n\s*\(local\.set \$scale \(v128\.load32_splat \(i32\.add \(local\.get \$sp\d\) \(local\.get \$sOff\)\)\)\)/g;
const TIMES_SCALE = /\n\s*\(local\.set \$w\d \(f32x4\.mul \(local\.get \$w\d\) \(local\.get \$scale\)\)\)/g;
const ACCUMULATORS = "(local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)";
const ZERO_A3 = "(local.set $a3 (v128.const i64x2 0 0))";
const ROWS = [0, 1, 2, 3];

/** `text` (fp8-rows.wat's, any of its builds) with its fp8 taking a scaled input; `file` names it in errors. */
export function scaledText(file, text) {
  const at = text.indexOf(FP8);
  const second = text.indexOf(SECOND_HALF, at);
  const end = text.indexOf(SUMS, at);
  if (at < 0 || second < 0 || end < 0)
    throw new Error(`${file}: its ".scaled" build finds no fp8 halves and sums`);
  const unscaled = [
    [SCALE_SPLAT, ""],
    [TIMES_SCALE, ""],
  ];
  const firstHalf = rewriteWat(file, ".scaled", text.slice(at, second), [
    ...unscaled,
    [ACCUMULATORS, `${ACCUMULATORS} ${ROWS.map((r) => `(local $b${r} v128)`).join(" ")}`],
    [ZERO_A3, `${ZERO_A3} ${ROWS.map((r) => `(local.set $b${r} (v128.const i64x2 0 0))`).join(" ")}`],
  ]);
  const secondHalf = rewriteWat(file, ".scaled", text.slice(second, end), [
    ...unscaled,
    [/\$a([0-3])/g, "$$b$1"],
    [
      /\(v128\.store offset=(0|16|32|48) \(local\.get \$acc\)/g,
      (_, o) => `(v128.store offset=${Number(o) + 64} (local.get $acc)`,
    ],
  ]);
  const sumAndScaleBack = ROWS.map(
    (r) =>
      `(local.set $a${r} (f32x4.mul (f32x4.add (local.get $a${r}) (local.get $b${r})) (v128.const f32x4 0x1p56 0x1p56 0x1p56 0x1p56)))\n        `,
  ).join("");
  return text.slice(0, at) + firstHalf + secondHalf + sumAndScaleBack + text.slice(end);
}
