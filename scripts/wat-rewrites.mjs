// A kernel's text with each [pattern, replacement] of `rewrites` applied in turn (String.replace),
// refused when one matches nothing (the kernel no longer has what a build rewrites). Used by
// build-kernels.mjs's ".halves" builds and fp8-lanes.mjs.

/** `text` rewritten; `file` and `build` (".halves") name the kernel and its build in the error. */
export function rewriteWat(file, build, text, rewrites) {
  let out = text;
  for (const [from, to] of rewrites) {
    const next = out.replace(from, to);
    if (next === out) throw new Error(`${file}: its "${build}" build rewrites ${from}, which is not there`);
    out = next;
  }
  return out;
}
