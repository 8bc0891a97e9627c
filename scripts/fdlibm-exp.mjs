// The exp that paged-attention/attention.wat's softmax calls, taken from swiglu/swiglu.wat rather
// than written twice: clamped_swiglu there carries fdlibm's exp (V8's Math.exp) written out as two
// interleaved chains (locals $v and $v2), which become `$exp2 (param $x v128) (param $x2 v128)
// (result v128 v128)`, exp of each, its constants read from immutable globals. Both chains, not
// one: half the calls. Refused when clamped_swiglu no longer has the section, a statement there
// sets no local, or a statement of one chain reads the other's locals. Used by build-kernels.mjs.
import { readFileSync } from "node:fs";

const SOURCE = "src/engine/kernels/swiglu/swiglu.wat";
const FUNCTION = /\n {2}\(func \(export "clamped_swiglu"\)[\s\S]*?(?=\n {2}\(func )/;
const FIRST = "      ;; |x|'s high word.";
const AFTER = "      (v128.store64_lane 0 (local.get $out)";
const MARKER = "  ;; (func $exp2) goes here: the build takes it from swiglu.wat (scripts/fdlibm-exp.mjs).";

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

/** `text` (attention.wat's) with both chains' exp as `$exp2` where its marker line stands. */
export function withExp(root, file, text) {
  if (!text.includes(MARKER)) throw new Error(`${file}: no line "${MARKER.trim()}" to put $exp2 at`);
  // The comments and the statements, each setting a local of one chain ($v or $v2); anything else
  // (a store, a branch) would not belong in a function of two values and two results.
  const body = statements(root);
  const other = body.find((s) => !/^ {6}(;;|\(local\.set \$)/.test(s));
  if (other !== undefined)
    throw new Error(
      `${SOURCE}: clamped_swiglu's exp section has a statement that sets no local: ${other.trim()}`,
    );
  const locals = [];
  for (const s of body.filter((s) => !s.trimStart().startsWith(";;"))) {
    const [set, ...read] = [...s.matchAll(/\$(\w+)/g)].map((m) => m[1]);
    if (read.some((l) => l.endsWith("2") !== set.endsWith("2")))
      throw new Error(`${SOURCE}: an exp statement setting $${set} reads the other chain`);
    if (!locals.includes(set)) locals.push(set);
  }
  // Each nonzero constant as an immutable global: V8 builds a v128.const anew at each use here
  // (the two chains hold too many values to keep them in registers), and reads a global in one load.
  const constants = [];
  const global = (literal) => {
    if (/^v128\.const \w+ (0 )+0$/.test(literal)) return `(${literal})`;
    if (!constants.includes(literal)) constants.push(literal);
    return `(global.get $expConst${constants.indexOf(literal)})`;
  };
  const statementsText = body.map((s) =>
    s.replace(/^ {2}/gm, "").replace(/\((v128\.const [^()]*)\)/g, (_, c) => global(c)),
  );
  const fn = [
    ...constants.map((c, i) => `  (global $expConst${i} v128 (${c}))`),
    "  (func $exp2 (param $x v128) (param $x2 v128) (result v128 v128)",
    `    ${locals.map((l) => `(local $${l} v128)`).join(" ")}`,
    ...statementsText,
    "    (local.get $y) (local.get $y2))",
  ].join("\n");
  return text.replace(MARKER, fn);
}
