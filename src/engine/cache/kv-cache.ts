import type { CacheSpec } from "./spec.js";

/**
 * The paged key and value storage of one layer: `numBlocks` blocks of `blockSize` slots, each slot
 * holding numKvHeads keys of headDim and values of vHeadDim. A slot number is block*blockSize+offset.
 */
export class LayerKvCache {
  readonly keys: Float32Array;
  readonly values: Float32Array;
  readonly keyStride: number;
  readonly valueStride: number;

  constructor(
    readonly spec: CacheSpec,
    numBlocks: number,
    readonly numKvHeads: number,
    readonly headDim: number,
    readonly vHeadDim: number,
  ) {
    this.keyStride = numKvHeads * headDim;
    this.valueStride = numKvHeads * vHeadDim;
    // Shared so the pool's worker threads can read the cache in place.
    this.keys = new Float32Array(new SharedArrayBuffer(numBlocks * spec.blockSize * this.keyStride * 4));
    this.values = new Float32Array(new SharedArrayBuffer(numBlocks * spec.blockSize * this.valueStride * 4));
  }

  /** The slot of position `pos` for a sequence with block table `blocks`. */
  slot(blocks: readonly number[], pos: number): number {
    const b = blocks[this.spec.blockIndex(pos)] as number;
    return b * this.spec.blockSize + (pos % this.spec.blockSize);
  }

  write(slot: number, k: Float32Array, kOffset: number, v: Float32Array, vOffset: number): void {
    this.keys.set(k.subarray(kOffset, kOffset + this.keyStride), slot * this.keyStride);
    this.values.set(v.subarray(vOffset, vOffset + this.valueStride), slot * this.valueStride);
  }

  /** Bytes one token takes in this layer. */
  static bytesPerToken(numKvHeads: number, headDim: number, vHeadDim: number): number {
    return 4 * numKvHeads * (headDim + vHeadDim);
  }
}
