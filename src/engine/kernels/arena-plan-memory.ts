import type { PlanMemory } from "../model/step-scratch.js";
import type { WasmArena } from "./wasm-arena.js";

/**
 * Arrays for a planned step's buffers in the shared memory, `bytes` of them at most: the matmuls
 * on the calling thread read such an input and write such an output where they lie (see
 * StepScratch). Without an arena (no SIMD) there is no such memory and it gives none.
 */
export function arenaPlanMemory(arena: WasmArena | null, bytes: number): PlanMemory {
  let left = bytes;
  return {
    float32: (length) => {
      if (arena === null || length * 4 > left) return undefined;
      const a = arena.array(Float32Array, length);
      if (a !== null) left -= length * 4;
      return a ?? undefined;
    },
  };
}
