import { describe, expect, it } from "vitest";
import { planKvCache } from "../cache/capacity.js";
import { CacheManager } from "./cache-manager.js";
import { BLOCK, EVERY_KIND, sequence } from "./core-fixture.js";
import { Scheduler } from "./scheduler.js";
import type { Chunk, Sequence } from "./sequence.js";

/** A scheduler over full-attention blocks only (`blocks` of them). */
function fullOnly(blocks: number, maxNumBatchedTokens = 64, maxNumSeqs = 8) {
  const cache = new CacheManager(planKvCache([EVERY_KIND[0] ?? {}], "window-sized", BLOCK), [blocks]);
  return { cache, scheduler: new Scheduler({ maxNumBatchedTokens, maxNumSeqs }, cache) };
}

/** What the engine does after a step: the chunks' tokens are computed; a finished prompt gets a token. */
function computed(chunks: readonly Chunk[]): void {
  for (const { seq, start, count } of chunks) {
    seq.numComputed = start + count;
    if (seq.numComputed === seq.tokens.length) seq.tokens.push(9);
  }
}

const shape = (chunks: readonly Chunk[]) => chunks.map((c) => [c.seq.id, c.start, c.count]);

describe("Scheduler", () => {
  it("prefills a long prompt in chunks within the step's token budget, running sequences first", () => {
    const { scheduler } = fullOnly(32, 6);
    const a = sequence(14, 1);
    const b = sequence(3, 1);
    scheduler.add(a);
    scheduler.add(b);
    const steps: (number | undefined)[][][] = [];
    for (let i = 0; i < 4; i++) {
      const chunks = scheduler.schedule();
      steps.push(shape(chunks).map(([id, start, count]) => [id === a.id ? 0 : 1, start, count]));
      computed(chunks);
    }
    expect(steps).toEqual([
      [[0, 0, 6]],
      [[0, 6, 6]],
      [
        [0, 12, 2],
        [1, 0, 3],
      ],
      [
        [0, 14, 1],
        [1, 3, 1],
      ],
    ]);
    expect(scheduler.running).toEqual([a, b]);
  });

  it("caps a chunk at what the smallest ring holds in flight", () => {
    const cache = new CacheManager(planKvCache(EVERY_KIND, "window-sized", BLOCK), [40, 40, 4]);
    const scheduler = new Scheduler({ maxNumBatchedTokens: 64, maxNumSeqs: 4 }, cache);
    scheduler.add(sequence(30, 3));
    expect(shape(scheduler.schedule()).map(([, s, n]) => [s, n])).toEqual([[0, 8]]);
  });

  it("admits no more sequences than max_num_seqs, a lead counting for its forks", () => {
    const { scheduler } = fullOnly(32, 64, 3);
    const lead = sequence(4, 1);
    lead.forks = [sequence(4, 1), sequence(4, 1)];
    const alone = sequence(4, 1);
    const late = sequence(4, 1);
    for (const s of [alone, lead, late]) scheduler.add(s);
    expect(scheduler.schedule().map((c) => c.seq)).toEqual([alone, lead]);
    expect(scheduler.waiting).toEqual([late]);
  });

  it("preempts the latest admitted sequence when blocks run out, and requeues it ahead of later arrivals", () => {
    // Three sequences of one block each; growing past it, the first two need a second block.
    const { cache, scheduler } = fullOnly(4);
    const seqs = [sequence(4, 1), sequence(4, 1), sequence(4, 1)];
    for (const s of seqs) scheduler.add(s);
    computed(scheduler.schedule());
    const later = sequence(2, 1);
    scheduler.add(later);
    const chunks = scheduler.schedule();
    // The first grows into the last free block, the second preempts the third for its own.
    expect(chunks.map((c) => c.seq)).toEqual([seqs[0], seqs[1]]);
    expect(scheduler.preemptions).toBe(1);
    expect(scheduler.waiting).toEqual([seqs[2], later]);
    const third = seqs[2] as Sequence;
    expect([third.status, third.numComputed, third.tables[0]]).toEqual(["waiting", 0, []]);
    expect(cache.usage()[0]?.used).toBe(4);
  });

  it("forks a computed lead: the first child takes its blocks, the others copies, one waits when none are free", () => {
    const { cache, scheduler } = fullOnly(5);
    const lead = sequence(8, 1);
    const children = [sequence(8, 1), sequence(8, 1), sequence(8, 1)];
    lead.forks = [...children];
    for (const c of children) c.lead = lead;
    scheduler.add(lead);
    computed(scheduler.schedule());
    const blocks = [...(lead.tables[0] as number[])];
    expect(scheduler.fork(lead)).toEqual(children);
    expect(children[0]?.tables[0]).toEqual(blocks);
    expect(children[1]?.tables[0]).toHaveLength(2);
    expect(scheduler.running).toEqual(children.slice(0, 2));
    expect(children.map((c) => [c.status, c.numComputed, c.lead])).toEqual([
      ["running", 8, undefined],
      ["running", 8, undefined],
      ["waiting", 0, undefined],
    ]);
    expect(scheduler.waiting).toEqual([children[2]]);
    expect(lead.status).toBe("finished");
    expect(cache.usage()[0]?.used).toBe(4);
  });

  it("removes a sequence from either queue and frees its blocks; drain empties both", () => {
    const { cache, scheduler } = fullOnly(8, 4);
    const [a, b] = [sequence(4, 1), sequence(4, 1)];
    scheduler.add(a);
    scheduler.add(b);
    scheduler.schedule();
    scheduler.remove(b);
    expect(scheduler.waiting).toEqual([]);
    expect(scheduler.drain()).toEqual([a]);
    expect(scheduler.idle).toBe(true);
    expect(cache.usage()[0]?.used).toBe(0);
  });
});
