import type { CacheSpec } from "./spec.js";

/** Every position is kept and attended: the standard causal layout. */
export class FullCacheSpec implements CacheSpec {
  readonly kind: string = "full";
  readonly ringBlocks = 0;
  readonly maxChunkTokens = Number.POSITIVE_INFINITY;

  constructor(readonly blockSize: number) {}

  blocksNeeded(numTokens: number): number {
    return Math.ceil(numTokens / this.blockSize);
  }

  blockIndex(pos: number): number {
    return Math.floor(pos / this.blockSize);
  }

  firstVisible(_pos: number): number {
    return 0;
  }
}
