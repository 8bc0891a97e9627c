import type { CacheManager } from "./cache-manager.js";
import type { Chunk, Sequence } from "./sequence.js";

/** What bounds a step: tokens in it, sequences running at once. */
export interface SchedulerLimits {
  readonly maxNumBatchedTokens: number;
  readonly maxNumSeqs: number;
}

/**
 * Continuous batching: each step runs every running sequence's next chunk, then admits waiting
 * ones in arrival order while tokens, sequence room and cache units last, a prompt prefilled in
 * chunks. When units run out, the most recently admitted sequence is preempted: its units are
 * freed and it waits, ahead of later arrivals, to be recomputed.
 */
export class Scheduler {
  readonly waiting: Sequence[] = [];
  readonly running: Sequence[] = [];
  preemptions = 0;

  constructor(
    private readonly limits: SchedulerLimits,
    private readonly cache: CacheManager,
  ) {}

  get idle(): boolean {
    return this.running.length === 0 && this.waiting.length === 0;
  }

  add(seq: Sequence): void {
    this.waiting.push(seq);
  }

  /** Takes `seq` out of the queues (it finished or was aborted) and frees its units. */
  remove(seq: Sequence): void {
    const queue = this.waiting.indexOf(seq);
    if (queue >= 0) this.waiting.splice(queue, 1);
    const run = this.running.indexOf(seq);
    if (run >= 0) this.running.splice(run, 1);
    this.cache.free(seq);
  }

  /** Empties both queues, freeing every unit, and returns what was in them. */
  drain(): Sequence[] {
    const all = [...this.running, ...this.waiting];
    for (const seq of all) this.cache.free(seq);
    this.running.length = 0;
    this.waiting.length = 0;
    return all;
  }

  /** The chunks of this step, units allocated for them. */
  schedule(): Chunk[] {
    const chunks: Chunk[] = [];
    let budget = this.limits.maxNumBatchedTokens;
    for (const seq of [...this.running]) {
      if (seq.status !== "running" || budget === 0) continue;
      const count = this.chunkSize(seq, budget);
      let fits = this.cache.tryAllocate(seq, seq.numComputed + count);
      while (!fits) {
        const victim = [...this.running].reverse().find((s) => !chunks.some((c) => c.seq === s));
        if (victim === undefined) break;
        this.preempt(victim);
        if (victim === seq) break;
        fits = this.cache.tryAllocate(seq, seq.numComputed + count);
      }
      if (!fits) continue;
      chunks.push({ seq, start: seq.numComputed, count });
      budget -= count;
    }
    // A lead takes room for all its sequences (unless nothing else runs).
    let runningWidth = this.running.reduce((sum, seq) => sum + seq.width, 0);
    while (this.waiting.length > 0 && budget > 0) {
      const seq = this.waiting[0] as Sequence;
      if (this.running.length > 0 && runningWidth + seq.width > this.limits.maxNumSeqs) break;
      const count = this.chunkSize(seq, budget);
      if (!this.cache.tryAllocate(seq, seq.numComputed + count)) break;
      this.waiting.shift();
      if (seq.scheduledAt === undefined) {
        seq.scheduledAt = performance.now();
        seq.onScheduled?.((seq.scheduledAt - seq.arrivedAt) / 1000);
      }
      seq.status = "running";
      this.running.push(seq);
      runningWidth += seq.width;
      chunks.push({ seq, start: seq.numComputed, count });
      budget -= count;
    }
    return chunks;
  }

  /**
   * The lead's prompt is computed: its sequences replace it where it ran, the first with its units,
   * the others with copies of them (or, when no units are free, waiting to recompute the prompt).
   */
  fork(lead: Sequence): Sequence[] {
    const forks = lead.forks ?? [];
    lead.forks = undefined;
    let at = this.running.indexOf(lead);
    this.running.splice(at, 1);
    lead.status = "finished";
    // Copies first: the first sequence then takes the lead's own units.
    const copied = forks.map((child, i) => i === 0 || this.cache.copy(lead, child));
    const first = forks[0];
    if (first !== undefined) this.cache.transfer(lead, first);
    forks.forEach((child, i) => {
      child.lead = undefined;
      child.scheduledAt = lead.scheduledAt;
      if (lead.promptLogprobs !== undefined) child.promptLogprobs = lead.promptLogprobs;
      if (!copied[i]) {
        child.status = "waiting";
        this.requeue(child);
        return;
      }
      child.numComputed = lead.numComputed;
      child.status = "running";
      this.running.splice(at++, 0, child);
    });
    return forks;
  }

  /**
   * Tokens of `seq` to run now: what is left (its drafts too), within the step's budget and its
   * smallest ring; drafts that do not fit are dropped.
   */
  private chunkSize(seq: Sequence, budget: number): number {
    const left = seq.tokens.length - seq.numComputed;
    const count = Math.min(left + seq.drafts.length, budget, this.cache.maxChunkTokens);
    if (count - left < seq.drafts.length) dropDrafts(seq, Math.max(0, count - left));
    return count;
  }

  private preempt(seq: Sequence): void {
    this.running.splice(this.running.indexOf(seq), 1);
    this.cache.free(seq);
    seq.numComputed = 0;
    dropDrafts(seq, 0);
    seq.status = "waiting";
    this.preemptions++;
    this.requeue(seq);
  }

  /** Back to the queue in arrival order, ahead of anything that came later. */
  private requeue(seq: Sequence): void {
    let i = 0;
    while (i < this.waiting.length && (this.waiting[i] as Sequence).id < seq.id) i++;
    this.waiting.splice(i, 0, seq);
  }
}

/** Keeps the first `keep` of `seq`'s drafts. */
function dropDrafts(seq: Sequence, keep: number): void {
  seq.drafts.length = Math.min(keep, seq.drafts.length);
  seq.draftProbs.length = Math.min(keep, seq.draftProbs.length);
}
