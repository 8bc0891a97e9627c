import type { CacheSpec } from "./spec.js";
import { checkWindow } from "./window.js";

/**
 * A sliding-window layer that keeps only its window (the "window-sized" KV layout): positions
 * cycle through a ring of `ringBlocks` blocks, block index = floor(pos / blockSize) mod ringBlocks,
 * so position p sits in slot p mod (ringBlocks x blockSize) of the ring read block after block.
 *
 * A step writes a sequence's chunk of up to `maxChunkTokens` (C) new positions s .. s+C-1 before
 * any of them attends, and the chunk's first query still reads back to s - window + 1. So the ring
 * must hold the window + C - 1 consecutive positions s-window+1 .. s+C-1 at once. Because the ring
 * is one circular run of slots, that holds at every alignment against block boundaries exactly
 * when window + C - 1 <= ringBlocks x blockSize: ringBlocks = ceil((window + C - 1) / blockSize).
 *
 * C is one window rounded up to whole blocks: the ring stays a constant of about twice the window
 * (so at long contexts the capacity grows like the global layers alone), and a long prompt is
 * prefilled in window-sized chunks rather than thousands of block-sized steps.
 */
export class SlidingWindowCacheSpec implements CacheSpec {
  readonly kind = "sliding-window";
  readonly ringBlocks: number;
  readonly maxChunkTokens: number;

  constructor(
    readonly blockSize: number,
    readonly window: number,
  ) {
    checkWindow(window);
    this.maxChunkTokens = Math.ceil(window / blockSize) * blockSize;
    this.ringBlocks = SlidingWindowCacheSpec.ringSize(window, this.maxChunkTokens, blockSize);
  }

  /** The fewest ring blocks that hold window + inFlight - 1 consecutive positions at any alignment. */
  static ringSize(window: number, inFlight: number, blockSize: number): number {
    return Math.ceil((window + inFlight - 1) / blockSize);
  }

  blocksNeeded(numTokens: number): number {
    return Math.min(Math.ceil(numTokens / this.blockSize), this.ringBlocks);
  }

  blockIndex(pos: number): number {
    return Math.floor(pos / this.blockSize) % this.ringBlocks;
  }

  firstVisible(pos: number): number {
    return Math.max(0, pos - this.window + 1);
  }
}
