import { instantiateWasm, type WasmMemory, type WasmModule } from "../../../common/wasm-runtime.js";
import { compileKernel } from "../wasm-kernels.js";

export type { WasmMemory, WasmModule };

/** tile(K, M, x, w, o, G, ldo): the dot products of M input rows with 4G weight rows (byte offsets). */
export type TileFunction = (
  K: number,
  M: number,
  x: number,
  w: number,
  o: number,
  G: number,
  ldo: number,
) => void;

/**
 * quads(K, M, x, w, o, G, ldo, ahead, acc): as TileFunction over row quads and inputs in pairs;
 * `ahead` is the byte offset of the weights the thread reads next (-1: none), whose first lines it
 * reads while its later input pairs compute, and `acc` that of QUADS_ACC_BYTES of scratch, where
 * the k-blocked pairs' sums wait between blocks; below twelve inputs nothing reads it
 * (matmul/matmul-tile.wat).
 */
export type QuadsFunction = (...args: [...Parameters<TileFunction>, ahead: number, acc: number]) => void;

/** The scratch the quads tile's k-blocked pairs keep their sums in: eight pairs of 128 bytes. */
export const QUADS_ACC_BYTES = 1024;

/**
 * Weight rows the SIMD matmul (matmul-kernel.ts) passes the tile at a time, whole groups of four;
 * the pool claims a matmul's rows in units of it (row-units.ts).
 */
export const TILE_CHUNK = 64;

/**
 * Bytes of a thread's tile region (SimdTile's base and bytes) for an [M, K] input: the x, rows
 * and out areas (M*K, TILE_CHUNK*K and M*TILE_CHUNK floats), then the quads tile's sums.
 */
export function tileRegionBytes(M: number, K: number): number {
  return (M * K + TILE_CHUNK * K + TILE_CHUNK * M) * 4 + QUADS_ACC_BYTES;
}

/**
 * The matmul's inner tiles (matmul/matmul-tile.wat), over byte offsets into the shared memory:
 * `tile` reads row-major weight rows and inputs, `quads` rows in row quads (tensor/row-quads.ts)
 * and inputs in pairs, as `pairs(K, M, src, dst)` writes at dst the row-major [M, K] inputs at src.
 */
export interface SimdTile {
  tile: TileFunction;
  quads: QuadsFunction;
  pairs: (K: number, M: number, src: number, dst: number) => void;
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
  const { tile, quads, pairs } = instantiateWasm(module, memory) as Pick<
    SimdTile,
    "tile" | "quads" | "pairs"
  >;
  return { tile, quads, pairs, memory, base: 0, bytes: 0 };
}
