// matmul/fp8-rows.wat's ".nan-free" text, for weights with no NaN code (0x7f, 0xff) at all: its fp8
// without the test for them per 16 codes (each `(if (v128.any_true (local.tee $nan ...` block
// dropped). Refused when there is none. Used by build-kernels.mjs and bench/kernel-before-after.ts.
export const NAN_TEST = "(if (v128.any_true (local.tee $nan";

/** `text` without its NaN code tests; `file` names it in the error when it has none. */
export function nanFreeText(file, text) {
  let out = text;
  let at = out.indexOf(NAN_TEST);
  if (at < 0) throw new Error(`${file}: its ".nan-free" build drops ${NAN_TEST}, which is not there`);
  for (; at >= 0; at = out.indexOf(NAN_TEST)) {
    let depth = 0;
    let end = at;
    do depth += out[end] === "(" ? 1 : out[end] === ")" ? -1 : 0;
    while (depth > 0 && ++end < out.length);
    const lineStart = out.lastIndexOf("\n", at);
    out = out.slice(0, lineStart) + out.slice(end + 1);
  }
  return out;
}
