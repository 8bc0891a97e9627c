import type { CacheSpec } from "./spec.js";

/**
 * One fixed-size state per sequence (a recurrent matrix, a convolution tail): the allocation spec of
 * a group of "slot" layers. A sequence holds one slot from admission to finish, whatever its length,
 * so the planner sees a "ring" of one block that every sequence needs once.
 */
export class StateSlotSpec implements CacheSpec {
  readonly kind = "state-slot";
  readonly ringBlocks = 1;
  readonly maxChunkTokens = Number.POSITIVE_INFINITY;

  constructor(readonly blockSize: number) {}

  blocksNeeded(numTokens: number): number {
    return numTokens > 0 ? 1 : 0;
  }

  blockIndex(_pos: number): number {
    return 0;
  }

  firstVisible(_pos: number): number {
    return 0;
  }
}

/** One layer's per-sequence states: `numSlots` runs of `floats` float32 values. */
export class StateSlots {
  readonly data: Float32Array;

  constructor(
    readonly numSlots: number,
    readonly floats: number,
  ) {
    this.data = new Float32Array(numSlots * floats);
  }

  /** Slot `slot`'s state, a view the layer updates in place. */
  view(slot: number): Float32Array {
    return this.data.subarray(slot * this.floats, (slot + 1) * this.floats);
  }
}
