import { instantiateWasm, type WasmMemory, type WasmModule } from "../../../common/wasm-runtime.js";
import { compileKernel } from "../wasm-kernels.js";

/** indexer-scores.wat's export (see there for the arguments). */
export interface IndexerScoresSimd {
  scores(q: number, pairs: number, d: number, w: number, k: number, count: number, s: number): void;
}

/** The compiled scoring loop, or undefined where WebAssembly SIMD is unavailable. */
export function compileIndexerScores(): WasmModule | undefined {
  return compileKernel("indexer-scores/indexer-scores");
}

/** An instance over the shared memory (one per thread). */
export function instantiateIndexerScores(module: WasmModule, memory: WasmMemory): IndexerScoresSimd {
  return instantiateWasm(module, memory) as IndexerScoresSimd;
}
