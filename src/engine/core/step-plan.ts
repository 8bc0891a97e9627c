import { StepScratch } from "../model/step-scratch.js";
import type { CacheManager } from "./cache-manager.js";
import type { Chunk } from "./sequence.js";

/**
 * A step's batch as the model runner lays it out: each chunk's tokens, positions and block tables
 * one after another, the tokens whose logits are wanted, and for each chunk the logit row of each
 * of its tokens (-1: none).
 */
export interface StepBatch {
  readonly tokens: Int32Array;
  readonly positions: Int32Array;
  readonly blockTables: (readonly (readonly number[])[])[];
  readonly sequences: { first: number; count: number; slot: number }[];
  readonly logitRows: number[];
  readonly rowsOf: number[][];
}

function emptyBatch(tokens: number, chunks: number): StepBatch {
  return {
    tokens: new Int32Array(tokens),
    positions: new Int32Array(tokens),
    blockTables: new Array(tokens),
    sequences: Array.from({ length: chunks }, () => ({ first: 0, count: 0, slot: -1 })),
    logitRows: [],
    rowsOf: Array.from({ length: chunks }, () => []),
  };
}

/**
 * Lays `chunks` out into `into` (sized for them): a token gets a logit row when its prompt logprob
 * is wanted, or when it is its sequence's last and another token is to be generated.
 */
function layOut(chunks: readonly Chunk[], cache: CacheManager, into: StepBatch): StepBatch {
  let at = 0;
  into.logitRows.length = 0;
  chunks.forEach(({ seq, start, count }, c) => {
    const run = into.sequences[c] as { first: number; count: number; slot: number };
    run.first = at;
    run.count = count;
    run.slot = cache.slotOf(seq);
    const rows = into.rowsOf[c] as number[];
    rows.length = 0;
    const completes = start + count === seq.tokens.length;
    for (let p = start; p < start + count; p++) {
      const wantsNext = completes && p === seq.tokens.length - 1 && seq.numGenerated < seq.request.maxTokens;
      if (seq.wantsPromptLogprob(p) || wantsNext) {
        rows.push(into.logitRows.length);
        into.logitRows.push(at);
      } else rows.push(-1);
      into.tokens[at] = seq.tokens[p] as number;
      into.positions[at] = p;
      into.blockTables[at] = seq.tables;
      at++;
    }
  });
  return into;
}

/** Shapes of decode step whose plans are kept (the least recently used goes first). */
const MAX_PLANS = 8;

/**
 * One decode step's work planned once per batch shape (how many sequences, how many logit rows):
 * its batch arrays, refilled in place, and the buffers its blocks take, in the order they take
 * them (StepScratch). A step of a shape seen before replays that shape's plan; a new shape plans
 * anew. Only steps of one token per sequence are planned; a step with a prompt chunk (prefill, a
 * recomputation after preemption) is laid out afresh, as every step is without replay.
 */
export class StepPlans {
  private readonly plans = new Map<string, { batch: StepBatch; scratch: StepScratch }>();
  private made = 0;
  private replayedSteps = 0;

  constructor(private readonly cache: CacheManager) {}

  /** Decode shapes planned so far, and steps that replayed a plan. */
  get counts(): { readonly plans: number; readonly replayedSteps: number } {
    return { plans: this.made, replayedSteps: this.replayedSteps };
  }

  /** `chunks` laid out, with the scratch to run them on when the step is planned (else none). */
  layOut(chunks: readonly Chunk[], planned: boolean): { batch: StepBatch; scratch?: StepScratch } {
    const tokens = chunks.reduce((s, c) => s + c.count, 0);
    if (!planned || tokens !== chunks.length)
      return { batch: layOut(chunks, this.cache, emptyBatch(tokens, chunks.length)) };
    const wanted = chunks.filter(({ seq }) => seq.numGenerated < seq.request.maxTokens).length;
    const key = `${tokens}/${wanted}`;
    let plan = this.plans.get(key);
    if (plan === undefined) {
      plan = { batch: emptyBatch(tokens, tokens), scratch: new StepScratch() };
      this.made++;
      if (this.plans.size >= MAX_PLANS) this.plans.delete(this.plans.keys().next().value as string);
    } else {
      this.plans.delete(key);
      this.replayedSteps++;
    }
    this.plans.set(key, plan);
    plan.scratch.begin();
    return { batch: layOut(chunks, this.cache, plan.batch), scratch: plan.scratch };
  }
}
