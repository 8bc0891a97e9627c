import { instantiateWasm, type WasmMemory, type WasmModule } from "../../../common/wasm-runtime.js";
import { compileKernel } from "../wasm-kernels.js";
import type { AttentionSimd } from "./attention-kernel.js";

/** The compiled attention loops (attention.wat), or undefined where WebAssembly SIMD is unavailable. */
export function compileAttentionSimd(): WasmModule | undefined {
  return compileKernel("paged-attention/attention");
}

/** An instance over the shared memory, with an empty region (the pool assigns one). */
export function instantiateAttentionSimd(module: WasmModule, memory: WasmMemory): AttentionSimd {
  const exports = instantiateWasm(module, memory) as Pick<
    AttentionSimd,
    "dot4" | "dot3" | "dot1" | "vacc2" | "vacc1" | "widen" | "narrow" | "softmax2" | "exps"
  >;
  return {
    dot4: exports.dot4,
    dot3: exports.dot3,
    dot1: exports.dot1,
    vacc2: exports.vacc2,
    vacc1: exports.vacc1,
    widen: exports.widen,
    narrow: exports.narrow,
    softmax2: exports.softmax2,
    exps: exports.exps,
    memory,
    base: 0,
    bytes: 0,
  };
}
