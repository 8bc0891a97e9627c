import { BringupError } from "../../../common/errors.js";
import type { WasmArena } from "../wasm-arena.js";
import { type Int8Quantize, quantizedBytes } from "./mxfp4-int8.js";

/**
 * Where a pool's dispatches write their input quantized for the integer MXFP4 path
 * (mxfp4-int8.wat's quantize): one region of the shared memory, grown geometrically as the scratch
 * regions are (regions are never freed), which every thread of the dispatch reads.
 */
export class Int8Inputs {
  private offset = -1;
  private bytes = 0;

  constructor(
    private readonly arena: WasmArena,
    private readonly quantize: Int8Quantize,
  ) {}

  /** x [M, K] at byte `xOffset` of the shared memory quantized into the region: its byte offset. */
  write(xOffset: number, M: number, K: number): number {
    const bytes = quantizedBytes(M, K);
    if (this.bytes < bytes) {
      const grown = Math.max(bytes, 2 * this.bytes);
      const offset = this.arena.allocate(grown);
      if (offset < 0) {
        throw new BringupError(
          "ENGINE_WASM_MEMORY_FULL",
          `no room left in the 4 GiB shared kernel memory for a ${M}x${K} input quantized to int8; lower --max-num-batched-tokens, or run with BRINGUP_ENGINE_MXFP4=fused.`,
        );
      }
      this.offset = offset;
      this.bytes = grown;
    }
    this.quantize(xOffset, M, K, this.offset);
    return this.offset;
  }
}
