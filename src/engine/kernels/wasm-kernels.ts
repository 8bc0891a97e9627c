import { builtWasmBytes, compileBuiltWasm } from "../../common/built-wasm.js";
import type { WasmModule } from "../../common/wasm-runtime.js";

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
  | "swiglu"
  | "indexer-scores";

const kernelUrl = (name: KernelBinary) => new URL(`./wasm/${name}.wasm`, import.meta.url);

/** The built binary of a kernel. */
export function kernelBytes(name: KernelBinary): Uint8Array {
  return builtWasmBytes(kernelUrl(name), "ENGINE_KERNELS_NOT_BUILT");
}

/** The compiled kernel, or undefined where this runtime lacks a feature it uses. */
export function compileKernel(name: KernelBinary): WasmModule | undefined {
  return compileBuiltWasm(kernelUrl(name), "ENGINE_KERNELS_NOT_BUILT");
}
