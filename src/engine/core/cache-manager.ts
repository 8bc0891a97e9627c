import { BlockManager } from "../cache/block-manager.js";
import type { KvCachePlan, StatePool } from "../cache/capacity.js";
import { unitBytes, unitsNeeded } from "../cache/capacity.js";
import { type LayerStorage, layerStorage } from "../cache/storage.js";
import type { Sequence } from "./sequence.js";

/** One pool's use: units held and in all, and their bytes. */
export interface PoolUsage {
  readonly pool: StatePool;
  readonly used: number;
  readonly total: number;
}

/**
 * The blocks and slots of every state pool and the layers' storage in them: allocates a
 * sequence's units as it grows, frees them, and copies one sequence's state to another (the forks
 * of a shared prompt). Units are handed out lowest id first, so a run is reproducible.
 */
export class CacheManager {
  /** Each layer's storage, by layer index. */
  readonly storage: readonly LayerStorage[];
  /** Most tokens one sequence may put in flight in one step: what its smallest ring allows. */
  readonly maxChunkTokens: number;
  private readonly units: readonly BlockManager[];
  /** The slot pool's index, -1 when no layer keeps a per-sequence state. */
  private readonly slotPool: number;

  constructor(
    readonly plan: KvCachePlan,
    counts: readonly number[],
  ) {
    this.units = counts.map((n) => new BlockManager(n));
    this.storage = plan.layers.map((planned) => layerStorage(planned, counts));
    this.slotPool = plan.pools.findIndex((p) => p.pool === "slots");
    this.maxChunkTokens = Math.min(
      ...plan.pools.map((p) => (p.pool === "blocks" ? p.placement.maxChunkTokens : Number.POSITIVE_INFINITY)),
    );
  }

  get numPools(): number {
    return this.units.length;
  }

  /** The state slot `seq` holds, -1 when no layer keeps a per-sequence state. */
  slotOf(seq: Sequence): number {
    return this.slotPool < 0 ? -1 : ((seq.tables[this.slotPool] as number[])[0] as number);
  }

  /** The first pool too small ever to hold a sequence of `numTokens` tokens, with what it needs. */
  shortfall(numTokens: number): { pool: StatePool; need: number; have: number } | undefined {
    for (const [i, pool] of this.plan.pools.entries()) {
      const need = unitsNeeded(pool, numTokens);
      const have = (this.units[i] as BlockManager).numBlocks;
      if (need > have) return { pool, need, have };
    }
    return undefined;
  }

  /** Gives `seq` the units it lacks to hold `numTokens` tokens; false (taking none) when they are not free. */
  tryAllocate(seq: Sequence, numTokens: number): boolean {
    const missing = this.plan.pools.map((pool, i) =>
      Math.max(0, unitsNeeded(pool, numTokens) - (seq.tables[i] as number[]).length),
    );
    if (!missing.every((n, i) => (this.units[i] as BlockManager).canAllocate(n))) return false;
    missing.forEach((n, i) => {
      (seq.tables[i] as number[]).push(...(this.units[i] as BlockManager).allocate(n));
    });
    return true;
  }

  free(seq: Sequence): void {
    seq.tables.forEach((table, i) => {
      (this.units[i] as BlockManager).release(table);
      table.length = 0;
    });
  }

  /** Hands every unit `from` holds to `to` (which holds none). */
  transfer(from: Sequence, to: Sequence): void {
    from.tables.forEach((table, i) => {
      (to.tables[i] as number[]).push(...table);
      table.length = 0;
    });
  }

  /** Gives `to` units holding what `from`'s hold; false (taking none) when there are not enough free. */
  copy(from: Sequence, to: Sequence): boolean {
    if (!from.tables.every((t, i) => (this.units[i] as BlockManager).canAllocate(t.length))) return false;
    from.tables.forEach((t, i) => {
      (to.tables[i] as number[]).push(...(this.units[i] as BlockManager).allocate(t.length));
    });
    for (const layer of this.storage) {
      for (const store of layer.all()) {
        if (store.kind === "slots") {
          store.copySlot(this.slotOf(from), this.slotOf(to));
          continue;
        }
        const dst = to.tables[store.group] as number[];
        (from.tables[store.group] as number[]).forEach((b, j) => {
          store.copyBlock(b, dst[j] as number);
        });
      }
    }
    return true;
  }

  /** Each pool's units held and in all. */
  usage(): PoolUsage[] {
    return this.plan.pools.map((pool, i) => {
      const units = this.units[i] as BlockManager;
      return { pool, used: units.numUsed, total: units.numBlocks };
    });
  }

  /** Fraction of the cache's bytes held by sequences (pools' units differ in size), 0 to 1. */
  bytesUsed(): number {
    let used = 0;
    let total = 0;
    for (const u of this.usage()) {
      used += u.used * unitBytes(u.pool);
      total += u.total * unitBytes(u.pool);
    }
    return used / total;
  }
}
