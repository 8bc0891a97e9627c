import { instantiateWasm, type WasmMemory, type WasmModule } from "../../../common/wasm-runtime.js";
import { compileKernel } from "../wasm-kernels.js";

export type { WasmMemory, WasmModule };

/**
 * The matmul's inner tile (matmul/matmul-tile.wat): tile(K, M, x, w, o, G, ldo, rowStride, kStride)
 * writes the dot products of M input rows with 4G weight rows, byte offsets into the shared
 * memory; the rows are row-major (rowStride 4K, kStride 16) or in row quads (16, 64).
 */
export interface SimdTile {
  tile: (
    K: number,
    M: number,
    x: number,
    w: number,
    o: number,
    G: number,
    ldo: number,
    rowStride: number,
    kStride: number,
  ) => void;
  memory: WasmMemory;
  /** This thread's scratch region in the memory: byte offset and size. */
  base: number;
  bytes: number;
}

/**
 * The compiled tile, fused (one rounding per multiply-add, relaxed SIMD) or not, or undefined where
 * WebAssembly SIMD (or, when `fused`, relaxed SIMD) is unavailable.
 */
export function compileSimdTile(fused: boolean): WasmModule | undefined {
  return compileKernel(fused ? "matmul/matmul-tile" : "matmul/matmul-tile.unfused");
}

/** An instance over the shared memory (one per thread; `base` is set by the pool). */
export function instantiateTile(module: WasmModule, memory: WasmMemory): SimdTile {
  const exports = instantiateWasm(module, memory) as Pick<SimdTile, "tile">;
  return { tile: exports.tile, memory, base: 0, bytes: 0 };
}
