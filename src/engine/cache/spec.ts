import { BringupError } from "../../common/errors.js";
import { FullCacheSpec } from "./full-spec.js";
import { SlidingMaskCacheSpec } from "./sliding-mask-spec.js";
import { SlidingWindowCacheSpec } from "./sliding-window-spec.js";

/**
 * How one group of layers keeps its keys and values in paged blocks. The block manager and the
 * attention read positions through a spec, so a sliding-window ring or a recurrent state can sit
 * beside the full layout without touching them.
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
  /**
   * Most tokens one sequence may put in flight in one step (written before any of them attends):
   * Infinity when every position is kept; a ring is sized for it, so the scheduler caps each
   * sequence's chunk at the smallest value over its groups.
   */
  readonly maxChunkTokens: number;
  /** Blocks a sequence must hold once it has `numTokens` tokens (positions 0..numTokens-1). */
  blocksNeeded(numTokens: number): number;
  /** Index into the sequence's block table of the block that stores position `pos`. */
  blockIndex(pos: number): number;
  /** The first position that a query at `pos` attends to. */
  firstVisible(pos: number): number;
}

/**
 * How the engine keeps sliding-window layers: "window-sized" keeps only the window (plus the
 * tokens in flight) as a ring of blocks; "full" keeps every position and masks to the window.
 * Full-attention layers keep every position in both.
 */
export type KvLayout = "window-sized" | "full";

export const KV_LAYOUT_NAMES: readonly KvLayout[] = ["window-sized", "full"];

export { FullCacheSpec };

/**
 * The cache spec for a layer's attention under `kvLayout`, and a key that is equal for layers that
 * can share block tables: layers with one key allocate blocks and place positions identically (a
 * sliding mask over full storage shares the full layers' tables; only what it attends differs).
 */
export function cacheSpecFor(
  attention: { readonly kind: string; readonly window?: number | undefined },
  blockSize: number,
  kvLayout: KvLayout = "window-sized",
): { spec: CacheSpec; key: string } {
  switch (attention.kind) {
    case "full":
      return { spec: new FullCacheSpec(blockSize), key: "full" };
    case "sliding": {
      const window = attention.window ?? 0;
      if (kvLayout === "full") return { spec: new SlidingMaskCacheSpec(blockSize, window), key: "full" };
      const spec = new SlidingWindowCacheSpec(blockSize, window);
      return { spec, key: `window:${window}` };
    }
    default:
      throw new BringupError(
        "CACHE_SPEC_UNKNOWN",
        `no KV cache spec for attention kind "${attention.kind}"; add one in src/engine/cache/.`,
        { subject: attention.kind },
      );
  }
}
