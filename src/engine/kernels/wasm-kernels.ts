import { readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { BringupError } from "../../common/errors.js";
import { compileWasm, type WasmModule, wasmApi } from "../../common/wasm-runtime.js";

/**
 * The kernels written in WebAssembly text in ./wasm/, each built to a binary beside it by
 * scripts/build-kernels.mjs (which `npm ci` and `npm run build` run). "matmul-tile" multiplies and
 * adds in one fused step (relaxed SIMD); "matmul-tile.unfused" is the same tile with a mul then an add,
 * and likewise for "mxfp4-rows" and "fp8-rows", the fused MXFP4 and block-scaled FP8 matmuls.
 */
export type KernelBinary =
  | "matmul-tile"
  | "matmul-tile.unfused"
  | "mxfp4-rows"
  | "mxfp4-rows.unfused"
  | "fp8-rows"
  | "fp8-rows.unfused"
  | "attention"
  | "swiglu";

/** The built binary of a kernel. */
export function kernelBytes(name: KernelBinary): Uint8Array {
  const url = new URL(`./wasm/${name}.wasm`, import.meta.url);
  try {
    return new Uint8Array(readFileSync(url));
  } catch (cause) {
    throw new BringupError(
      "ENGINE_KERNELS_NOT_BUILT",
      `the WebAssembly kernel ${url.pathname} is missing; run \`npm run build\` (npm ci runs it) to build the kernels.`,
      { subject: url.pathname, cause },
    );
  }
}

/**
 * The compiled kernel, or undefined where this runtime lacks a feature it uses. Node 20's V8 has
 * relaxed SIMD behind --experimental-wasm-relaxed-simd, which this turns on (once, process-wide,
 * so worker threads instantiate the module too) only when the bytes do not validate without it.
 */
export function compileKernel(name: KernelBinary): WasmModule | undefined {
  const bytes = kernelBytes(name);
  if (wasmApi !== undefined && !wasmApi.validate(bytes)) {
    try {
      setFlagsFromString("--experimental-wasm-relaxed-simd");
    } catch {
      return undefined;
    }
  }
  return compileWasm(bytes);
}
