import type { PerTokenState } from "./state-spec.js";
import { checkRatio, checkWindow } from "./window.js";

/**
 * Where a per-token state puts each position in a sequence's blocks and which positions a query
 * reads. Every position is kept (block index = floor(pos / blockSize)) except for a sliding window
 * kept as a ring of `ringBlocks` blocks, block index = floor(pos / blockSize) mod ringBlocks, so
 * position p sits in slot p mod (ringBlocks x blockSize) of the ring read block after block.
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
export class BlockPlacement {
  /**
   * 0 when every position is kept; otherwise positions cycle through this many blocks. The
   * attention kernel computes slots from this number because it runs in worker threads that
   * cannot call methods.
   */
  readonly ringBlocks: number;
  /**
   * Most tokens one sequence may put in flight in one step (written before any of them attends):
   * Infinity when every position is kept; a ring is sized for it, so the scheduler caps each
   * sequence's chunk at the smallest value over its groups.
   */
  readonly maxChunkTokens: number;

  /** Positions one block spans: blockSize, or blockSize x stride for compressed rows. */
  readonly tokensPerBlock: number;

  /**
   * `window` 0: every earlier position is attended; `ring`: keep only the window, as a ring.
   * `stride` > 1 keeps one row per `stride` positions (compressed rows; never a ring): row r, for
   * positions r*stride .. (r+1)*stride - 1, sits where position r would with stride 1.
   */
  constructor(
    readonly blockSize: number,
    readonly window: number,
    ring: boolean,
    readonly stride = 1,
  ) {
    this.tokensPerBlock = blockSize * stride;
    this.maxChunkTokens = ring ? Math.ceil(window / blockSize) * blockSize : Number.POSITIVE_INFINITY;
    this.ringBlocks = ring ? BlockPlacement.ringSize(window, this.maxChunkTokens, blockSize) : 0;
  }

  /** The fewest ring blocks that hold window + inFlight - 1 consecutive positions at any alignment. */
  static ringSize(window: number, inFlight: number, blockSize: number): number {
    return Math.ceil((window + inFlight - 1) / blockSize);
  }

  /** Blocks a sequence must hold once it has `numTokens` tokens (positions 0..numTokens-1). */
  blocksNeeded(numTokens: number): number {
    const blocks = Math.ceil(Math.floor(numTokens / this.stride) / this.blockSize);
    return this.ringBlocks > 0 ? Math.min(blocks, this.ringBlocks) : blocks;
  }

  /** Index into the sequence's block table of the block that stores position (or row) `pos`. */
  blockIndex(pos: number): number {
    const b = Math.floor(pos / this.blockSize);
    return this.ringBlocks > 0 ? b % this.ringBlocks : b;
  }

  /** The first position that a query at `pos` attends to. */
  firstVisible(pos: number): number {
    return this.window > 0 ? Math.max(0, pos - this.window + 1) : 0;
  }

  /** The slot of position (or compressed row) `pos` for a sequence with block table `blocks`. */
  slot(blocks: readonly number[], pos: number): number {
    return (blocks[this.blockIndex(pos)] as number) * this.blockSize + (pos % this.blockSize);
  }
}

/**
 * The placement of `spec` in blocks of `blockSize` tokens, and a key equal for states that can
 * share block tables: they allocate blocks and place positions identically (a sliding mask, a
 * latent and indexer keys share the full layers' tables; only what they attend differs;
 * compressed rows of one ratio share theirs).
 */
export function placementOf(
  spec: PerTokenState,
  blockSize: number,
): { placement: BlockPlacement; key: string } {
  switch (spec.kind) {
    case "sliding-window":
      return {
        placement: new BlockPlacement(blockSize, checkWindow(spec.window), true),
        key: `window:${spec.window}`,
      };
    case "sliding-mask":
      return { placement: new BlockPlacement(blockSize, checkWindow(spec.window), false), key: "full" };
    case "full":
    case "latent":
    case "indexer-keys":
      return { placement: new BlockPlacement(blockSize, 0, false), key: "full" };
    case "compressed":
      return {
        placement: new BlockPlacement(blockSize, 0, false, checkRatio(spec.ratio)),
        key: `compressed:${spec.ratio}`,
      };
  }
}
