import { BringupError } from "../../common/errors.js";

/**
 * Hands out fixed-size KV blocks from a pool of `numBlocks` and takes them back. Blocks are reused
 * lowest id first so a run is reproducible.
 */
export class BlockManager {
  private readonly free: number[] = [];

  constructor(readonly numBlocks: number) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) {
      throw new BringupError(
        "KV_BUDGET_TOO_SMALL",
        `the KV cache needs at least one block, got ${numBlocks}; raise the KV memory budget.`,
      );
    }
    for (let b = numBlocks - 1; b >= 0; b--) this.free.push(b);
  }

  get numFree(): number {
    return this.free.length;
  }

  get numUsed(): number {
    return this.numBlocks - this.free.length;
  }

  canAllocate(n: number): boolean {
    return n <= this.free.length;
  }

  /** Takes `n` blocks; throws KV_EXHAUSTED if there are not that many (check canAllocate first). */
  allocate(n: number): number[] {
    if (n > this.free.length) {
      throw new BringupError("KV_EXHAUSTED", `asked for ${n} KV blocks with ${this.free.length} free.`);
    }
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(this.free.pop() as number);
    return out;
  }

  release(blocks: readonly number[]): void {
    for (let i = blocks.length - 1; i >= 0; i--) this.free.push(blocks[i] as number);
    this.free.sort((a, b) => b - a);
  }
}
