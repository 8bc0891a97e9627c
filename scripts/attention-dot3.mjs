// paged-attention/attention.wat's text with a `dot3` beside its `dot4`: dot4 with its fourth query
// row's locals, setup, sums and store dropped, so each key row is read once for three query rows
// (a decode step of a model with three query heads a KV head, where dot4 never runs and dot1 would
// read each key row three times) with the same per-row sums in the same order: the same bits. Built
// rather than written out, so the two stay one text. Refused when dot4 no longer has what it drops.
// Used by build-kernels.mjs.
import { rewriteWat } from "./wat-rewrites.mjs";

const DOT4 = /\n {2}\(func \(export "dot4"\)[\s\S]*?(?=\n {2}\(func )/;
const ROW3_LOCAL = / \(local \$[qsab]3 (?:i32|v128)\)/g;
const ROW3_SUM = /\n\s*\(local\.set \$[ab]3 \(f64x2\.add [^\n]*\n[^\n]*/g;
const ROW3_SET = /\n\s*\(local\.set \$[qsab]3 [^\n]*/g;
const ROW3_STORE = /\n\s*\(f64\.store \(i32\.add \(local\.get \$s3\)[^\n]*(?:\n[^\n]*){5}/;

/** `text` (attention.wat's) with dot3 added after dot4; `file` names it in the error. */
export function withDot3(file, text) {
  const dot4 = DOT4.exec(text)?.[0];
  if (dot4 === undefined) throw new Error(`${file}: no dot4 followed by another function to build dot3 from`);
  const dot3 = rewriteWat(file, ".dot3", dot4, [
    ['(func (export "dot4")', '(func (export "dot3")'],
    [ROW3_LOCAL, ""],
    [ROW3_SUM, ""],
    [ROW3_SET, ""],
    [ROW3_STORE, ""],
  ]);
  if (/\$[qsab]3\b/.test(dot3)) throw new Error(`${file}: dot4's fourth row is still in its dot3`);
  return text.replace(dot4, dot4 + dot3);
}
