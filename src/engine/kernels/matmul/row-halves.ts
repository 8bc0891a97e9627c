import type { WasmModule } from "../../../common/wasm-runtime.js";
import { compileKernel } from "../wasm-kernels.js";
import { compileSimdTile } from "./tile-module.js";

/**
 * matmul/row-halves.wat's rowHalves(K, x, w, o, G): one input row at byte x against G groups of
 * four row-quads rows from byte w, outputs at byte o, the groups read as two streams (a half
 * apart); the tile's bits at one input row.
 */
export type RowHalves = (K: number, x: number, w: number, o: number, G: number) => void;

/**
 * The matmul tile (fused where `fma` asks and relaxed SIMD exists, else unfused; none without
 * `simd`) and the row-halves kernel built the same way, so the two give the same bits.
 */
export function compileTiles(
  simd: boolean,
  fma: boolean,
): { tile?: WasmModule; rowHalves?: WasmModule; fused: boolean } {
  const fusedTile = simd && fma ? compileSimdTile(true) : undefined;
  const tile = fusedTile ?? (simd ? compileSimdTile(false) : undefined);
  const fused = fusedTile !== undefined;
  if (tile === undefined) return { fused };
  return { tile, rowHalves: compileKernel(fused ? "matmul/row-halves" : "matmul/row-halves.unfused"), fused };
}
