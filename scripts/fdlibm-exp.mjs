// The exp that paged-attention/attention.wat's softmax calls, taken from swiglu/swiglu.wat rather
// than written twice: clamped_swiglu there carries fdlibm's exp (V8's Math.exp) written out as two
// interleaved chains; the first chain's statements become `$exp (param $x v128) (result v128)`.
// Refused when clamped_swiglu no longer has the section or a kept statement reads the second chain.
// Used by build-kernels.mjs.
import { readFileSync } from "node:fs";

const SOURCE = "src/engine/kernels/swiglu/swiglu.wat";
const FUNCTION = /\n {2}\(func \(export "clamped_swiglu"\)[\s\S]*?(?=\n {2}\(func )/;
const FIRST = "      ;; |x|'s high word.";
const AFTER = "      (v128.store64_lane 0 (local.get $out)";
const MARKER = "  ;; (func $exp) goes here: the build takes it from swiglu.wat (scripts/fdlibm-exp.mjs).";

/** clamped_swiglu's exp section as statements (each with its continuation lines) and comments. */
function statements(root) {
  const clamped = FUNCTION.exec(readFileSync(`${root}/${SOURCE}`, "utf8"))?.[0];
  const from = clamped?.indexOf(FIRST) ?? -1;
  const to = clamped?.indexOf(AFTER) ?? -1;
  if (clamped === undefined || from < 0 || to < from)
    throw new Error(`${SOURCE}: no exp section in clamped_swiglu`);
  const out = [];
  for (const line of clamped.slice(from, to).trimEnd().split("\n")) {
    if (/^ {6}\S/.test(line)) out.push(line);
    else out[out.length - 1] += `\n${line}`;
  }
  return out;
}

/** `text` (attention.wat's) with the first chain's exp as `$exp` where its marker line stands. */
export function withExp(root, file, text) {
  if (!text.includes(MARKER)) throw new Error(`${file}: no line "${MARKER.trim()}" to put $exp at`);
  // The comments, and the statements that set a first-chain local (the second chain's end in 2).
  const body = statements(root).filter((s) => /^ {6}(;;|\(local\.set \$[A-Za-z]+\b)/.test(s));
  if (body.some((s) => /\$[A-Za-z]+2\b/.test(s)))
    throw new Error(`${SOURCE}: its first exp chain reads the second`);
  const locals = [
    ...new Set(body.flatMap((s) => [...s.matchAll(/^ {6}\(local\.set \$(\w+)/gm)].map((m) => m[1]))),
  ];
  const declared = locals.map((l) => `(local $${l} v128)`).join(" ");
  const fn = [
    "  (func $exp (param $x v128) (result v128)",
    `    ${declared}`,
    ...body.map((s) => s.replace(/^ {2}/gm, "")),
    "    (local.get $y))",
  ].join("\n");
  return text.replace(MARKER, fn);
}
