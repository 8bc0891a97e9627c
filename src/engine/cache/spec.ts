import { BringupError } from "../../common/errors.js";

/**
 * How one group of layers keeps its keys and values in paged blocks. The block manager and the
 * attention read positions through a spec, so a sliding-window ring or a recurrent state can be
 * added beside the full layout without touching them.
 */
export interface CacheSpec {
  readonly kind: string;
  readonly blockSize: number;
  /**
   * 0 when block index = floor(pos / blockSize); otherwise positions cycle through this many blocks
   * (a window kept as a ring), block index = floor(pos / blockSize) mod ringBlocks. The attention
   * kernel computes slots from this number because it runs in worker threads that cannot call methods.
   */
  readonly ringBlocks: number;
  /** Blocks a sequence must hold once it has `numTokens` tokens (positions 0..numTokens-1). */
  blocksNeeded(numTokens: number): number;
  /** Index into the sequence's block table of the block that stores position `pos`. */
  blockIndex(pos: number): number;
  /** The first position that a query at `pos` attends to. */
  firstVisible(pos: number): number;
}

/** Every position is kept and attended: the standard causal layout. */
export class FullCacheSpec implements CacheSpec {
  readonly kind = "full";
  readonly ringBlocks = 0;

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

/**
 * The cache spec for a layer's attention, and a key that is equal for layers that can share block
 * tables (same kind and parameters). New attention kinds add a case here.
 */
export function cacheSpecFor(
  attention: { readonly kind: string },
  blockSize: number,
): { spec: CacheSpec; key: string } {
  switch (attention.kind) {
    case "full":
      return { spec: new FullCacheSpec(blockSize), key: "full" };
    default:
      throw new BringupError(
        "CACHE_SPEC_UNKNOWN",
        `no KV cache spec for attention kind "${attention.kind}"; add one in src/engine/cache/.`,
        {
          subject: attention.kind,
        },
      );
  }
}
