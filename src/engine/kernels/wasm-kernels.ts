import { builtWasmBytes, compileBuiltWasm } from "../../common/built-wasm.js";
import type { WasmModule } from "../../common/wasm-runtime.js";

/** matmul/fp8-rows.wat's builds (see KernelBinary). */
type Fp8RowsBinary =
  `matmul/fp8-rows${"" | ".scaled"}${"" | ".nan-free"}${"" | ".lanes" | ".quads"}${"" | ".unfused"}`;

/**
 * The kernels written in WebAssembly text, each in its op's folder (./<op>/<name>.wat), built to a
 * binary beside it by scripts/build-kernels.mjs (which `npm ci` and `npm run build` run).
 * "matmul-tile" multiplies and adds in one fused step (relaxed SIMD); "matmul-tile.unfused" is the
 * same tile with a mul then an add, and likewise "mxfp4-rows" (the fused MXFP4 matmul).
 * "mxfp4-decode" (its scratch form's decode) swizzles with relaxed SIMD; "mxfp4-decode.plain-swizzle"
 * without it, to the same bits; "mxfp4-decode.halves" (and its plain-swizzle build) decodes codes
 * in the halves order of a re-laid-out checkpoint (scripts/build-kernels.mjs).
 * "mxfp4-int8" dots on relaxed integer dot products; "mxfp4-int8.plain-dot" makes the same sums
 * from plain SIMD. "mxfp4-relayout" re-lays MXFP4 codes out in halves order as a load places them,
 * "fp8-relayout" FP8 codes in lanes order.
 * "fp8-rows.nan-free" (and its unfused build) is the FP8 rows without their NaN code test;
 * "fp8-rows.lanes" (and its `.nan-free`, each also unfused) reads codes in formats/fp8-lanes.ts's order,
 * "fp8-rows.quads" (likewise) in formats/fp8-quads.ts's; "fp8-rows.scaled" (before any of those
 * suffixes) takes its input times the scales (the `fp8=scaled` switch: scripts/fp8-scaled.mjs).
 */
export type KernelBinary =
  | "matmul/matmul-tile"
  | "matmul/matmul-tile.unfused"
  | "matmul/mxfp4-rows"
  | "matmul/mxfp4-rows.unfused"
  | "matmul/mxfp4-rows.halves"
  | "matmul/mxfp4-rows.halves.unfused"
  | "matmul/mxfp4-decode"
  | "matmul/mxfp4-decode.plain-swizzle"
  | "matmul/mxfp4-decode.halves"
  | "matmul/mxfp4-decode.halves.plain-swizzle"
  | "matmul/mxfp4-int8"
  | "matmul/mxfp4-int8.plain-dot"
  | "matmul/mxfp4-relayout"
  | "matmul/fp8-relayout"
  | Fp8RowsBinary
  | "paged-attention/attention"
  | "swiglu/swiglu"
  | "vector/vector"
  | "indexer-scores/indexer-scores";

const kernelUrl = (name: KernelBinary) => new URL(`./${name}.wasm`, import.meta.url);

/** The built binary of a kernel. */
export function kernelBytes(name: KernelBinary): Uint8Array {
  return builtWasmBytes(kernelUrl(name), "ENGINE_KERNELS_NOT_BUILT");
}

/** The compiled kernel, or undefined where this runtime lacks a feature it uses. */
export function compileKernel(name: KernelBinary): WasmModule | undefined {
  return compileBuiltWasm(kernelUrl(name), "ENGINE_KERNELS_NOT_BUILT");
}
