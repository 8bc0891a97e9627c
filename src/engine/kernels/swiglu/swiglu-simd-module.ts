import { instantiateWasm, type WasmMemory, type WasmModule } from "../../../common/wasm-runtime.js";
import { compileKernel } from "../wasm-kernels.js";

/**
 * swiglu(g, u, count) of swiglu.wat: g = (g / (1 + exp(-g))) · u over 4·count f32 values at
 * byte offsets g and u of the shared memory, in f64 like swiglu.ts with its own exp.
 */
export interface SwigluSimd {
  swiglu: (g: number, u: number, count: number) => void;
  /**
   * gpt-oss's clamped SwiGLU over `count` (a multiple of 4) interleaved (gate, linear) f32 pairs at
   * byte gu into f32 at byte out, the bits of ./clamped-swiglu.ts (see swiglu.wat).
   */
  clamped_swiglu: (gu: number, out: number, count: number, limit: number, alpha: number) => void;
  /** The same in f32 arithmetic, the bits of ./clamped-swiglu-f32.ts (the integer MXFP4 path's). */
  clamped_swiglu_f32: (gu: number, out: number, count: number, limit: number, alpha: number) => void;
}

/** The compiled module, or undefined where WebAssembly SIMD is unavailable. */
export function compileSwigluSimd(): WasmModule | undefined {
  return compileKernel("swiglu/swiglu");
}

/** An instance over the shared memory (one per thread). */
export function instantiateSwigluSimd(module: WasmModule, memory: WasmMemory): SwigluSimd {
  return instantiateWasm(module, memory) as SwigluSimd;
}
