import { compileIndexerScores } from "./indexer-scores/indexer-simd-module.js";
import type { KernelModules } from "./kernel-thread.js";
import { compileSimdTile } from "./matmul/tile-module.js";
import { fp8Module, mxfp4Modules } from "./narrow-modules.js";
import { compileAttentionSimd } from "./paged-attention/attention-simd-module.js";
import { compileSwigluSimd } from "./swiglu/swiglu-simd-module.js";
import type { KernelSwitches } from "./switches.js";
import { type WasmArena, wasmArena } from "./wasm-arena.js";

/** What a MatmulPool runs (poolModules): its shared memory, its threads' compiled kernels, and which paths they are. */
export interface PoolModules {
  /** The shared WebAssembly memory (null: no SIMD, the plain JavaScript kernels). */
  readonly arena: WasmArena | null;
  readonly modules: KernelModules;
  readonly fma: boolean;
  readonly mxfp4: KernelSwitches["mxfp4"];
  readonly fp8: KernelSwitches["fp8"];
}

/**
 * The kernels a pool compiles for its threads as the switches ask: the tile fused where relaxed
 * SIMD validates (unless `fma` is off), else unfused, else none (no SIMD); with it the narrow
 * weights' kernels (narrow-modules.ts), attention's, SwiGLU's and the indexer's. The paths it
 * reports are the ones compiled (e.g. int8 where its kernel did not compile is `unpacked`).
 */
export function poolModules(switches: KernelSwitches): PoolModules {
  const arena = switches.simd ? wasmArena() : null;
  const fusedTile = arena !== null && switches.fma ? compileSimdTile(true) : undefined;
  const tile = fusedTile ?? (arena !== null ? compileSimdTile(false) : undefined);
  const fma = fusedTile !== undefined;
  const modules: KernelModules =
    tile === undefined || arena === null
      ? {}
      : {
          tile,
          ...mxfp4Modules(arena, fma, switches),
          ...fp8Module(fma, switches),
          attention: compileAttentionSimd(),
          swiglu: compileSwigluSimd(),
          indexer: compileIndexerScores(),
        };
  return {
    arena: tile === undefined ? null : arena,
    modules,
    fma,
    mxfp4: modules.mxfp4Int8 !== undefined ? "int8" : modules.mxfp4 === undefined ? "unpacked" : "fused",
    fp8: modules.fp8?.file.scaled !== undefined ? "scaled" : "exact",
  };
}
