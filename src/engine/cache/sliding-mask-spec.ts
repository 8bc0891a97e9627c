import { FullCacheSpec } from "./full-spec.js";
import { checkWindow } from "./window.js";

/**
 * A sliding-window layer over full storage (the "full" KV layout): every position is kept, as for
 * full attention, and a query at pos attends only to pos - window + 1 .. pos.
 */
export class SlidingMaskCacheSpec extends FullCacheSpec {
  override readonly kind = "sliding-mask";

  constructor(
    blockSize: number,
    readonly window: number,
  ) {
    super(blockSize);
    checkWindow(window);
  }

  override firstVisible(pos: number): number {
    return Math.max(0, pos - this.window + 1);
  }
}
