import { readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import type { ErrorCode } from "./error-catalogue.js";
import { BringupError } from "./errors.js";
import { compileWasm, type WasmModule, wasmApi } from "./wasm-runtime.js";

/**
 * A WebAssembly binary that scripts/build-kernels.mjs built from its .wat source (which `npm ci` and
 * `npm run build` run), shipped next to the module that loads it: pass
 * `new URL("./wasm/name.wasm", import.meta.url)` and the error code the caller's module reports when
 * the binary is missing.
 */
export function builtWasmBytes(url: URL, notBuiltCode: ErrorCode): Uint8Array {
  try {
    return new Uint8Array(readFileSync(url));
  } catch (cause) {
    throw new BringupError(
      notBuiltCode,
      `the WebAssembly kernel ${url.pathname} is missing; run \`npm run build\` (npm ci runs it) to build the kernels.`,
      { subject: url.pathname, cause },
    );
  }
}

/**
 * The compiled binary, or undefined where this runtime lacks a feature it uses (SIMD, relaxed SIMD).
 * Node 20's V8 has relaxed SIMD behind --experimental-wasm-relaxed-simd, which this turns on (once,
 * process-wide, so worker threads instantiate the module too) only when the bytes do not validate
 * without it.
 */
export function compileBuiltWasm(url: URL, notBuiltCode: ErrorCode): WasmModule | undefined {
  const bytes = builtWasmBytes(url, notBuiltCode);
  if (wasmApi !== undefined && !wasmApi.validate(bytes)) {
    try {
      setFlagsFromString("--experimental-wasm-relaxed-simd");
    } catch {
      return undefined;
    }
  }
  return compileWasm(bytes);
}

const swizzleKernels = new Map<string, WasmModule | null>();

/**
 * A kernel whose only relaxed SIMD instruction is i8x16.relaxed_swizzle: its build at `url` where
 * `relaxed` is asked for and the runtime has relaxed SIMD, else its ".plain-swizzle" build (see
 * scripts/build-kernels.mjs), with which one it is; undefined where the runtime lacks SIMD.
 * Compiled once per process.
 */
export function compileSwizzleKernel(
  url: URL,
  notBuiltCode: ErrorCode,
  relaxed: boolean,
): { module: WasmModule; relaxed: boolean } | undefined {
  const compiled = (at: URL) => {
    if (!swizzleKernels.has(at.href)) swizzleKernels.set(at.href, compileBuiltWasm(at, notBuiltCode) ?? null);
    return swizzleKernels.get(at.href) ?? undefined;
  };
  const fast = relaxed ? compiled(url) : undefined;
  if (fast !== undefined) return { module: fast, relaxed: true };
  const plain = compiled(new URL(url.href.replace(/\.wasm$/, ".plain-swizzle.wasm")));
  return plain === undefined ? undefined : { module: plain, relaxed: false };
}
