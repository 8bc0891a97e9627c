import { afterAll, describe, expect, it } from "vitest";
import { MatmulPool } from "../kernels/pool.js";
import { CacheManager } from "./cache-manager.js";
import { everyKindPlan, sequence } from "./core-fixture.js";
import type { Chunk } from "./sequence.js";
import { StepPlans } from "./step-plan.js";

const pool = new MatmulPool(1);
afterAll(() => pool.close());

/** `n` sequences of `prompt` tokens each with its blocks and slots, as decode chunks of their last token. */
function decodeChunks(cache: CacheManager, n: number, prompt: number): Chunk[] {
  return Array.from({ length: n }, () => {
    const seq = sequence(prompt, cache.numPools);
    cache.tryAllocate(seq, prompt);
    return { seq, start: prompt - 1, count: 1 };
  });
}

describe("StepPlans", () => {
  it("lays a planned step out as an unplanned one, and replays a batch size's plan in place", () => {
    const cache = new CacheManager(everyKindPlan(), [64, 64, 8, 64]);
    const plans = new StepPlans(cache, pool);
    const chunks = decodeChunks(cache, 3, 5);
    const fresh = plans.layOut(chunks, false);
    const planned = plans.layOut(chunks, true);
    expect(fresh.scratch).toBeUndefined();
    expect(planned.batch).toEqual(fresh.batch);
    expect([...planned.batch.positions]).toEqual([4, 4, 4]);
    expect(planned.batch.rowsOf).toEqual([[0], [1], [2]]);
    const again = plans.layOut(decodeChunks(cache, 3, 6), true);
    expect(again.batch).toBe(planned.batch);
    expect(again.scratch).toBe(planned.scratch);
    expect([...again.batch.positions]).toEqual([5, 5, 5]);
    expect(plans.counts).toEqual({ plans: 1, replayedSteps: 1 });
  });

  it("plans a new batch size anew, and runs steps with a prompt chunk on one shared scratch", () => {
    const cache = new CacheManager(everyKindPlan(), [64, 64, 8, 64]);
    const plans = new StepPlans(cache, pool);
    plans.layOut(decodeChunks(cache, 2, 5), true);
    const other = plans.layOut(decodeChunks(cache, 1, 5), true);
    expect(other.batch.tokens).toHaveLength(1);
    const seq = sequence(4, cache.numPools);
    cache.tryAllocate(seq, 4);
    const prefill = plans.layOut([...decodeChunks(cache, 1, 3), { seq, start: 0, count: 4 }], true);
    expect(prefill.scratch).toBeDefined();
    expect(plans.layOut([{ seq, start: 0, count: 4 }], true).scratch).toBe(prefill.scratch);
    expect(prefill.batch.rowsOf).toEqual([[0], [-1, -1, -1, 1]]);
    expect(plans.counts).toEqual({ plans: 2, replayedSteps: 0 });
  });
});
