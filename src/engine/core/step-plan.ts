import type { MatmulPool } from "../kernels/pool.js";
import { type PlanMemory, StepScratch } from "../model/step-scratch.js";
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
 * is wanted, or when it is its sequence's last computed token or a draft after it, and another
 * token is to be generated.
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
    // A chunk that ends with drafted tokens verifies them: each of its rows from the last computed
    // token on predicts the next.
    const known = seq.tokens.length;
    const completes = start + count === known + seq.drafts.length;
    for (let p = start; p < start + count; p++) {
      const wantsNext = completes && p >= known - 1 && seq.numGenerated < seq.request.maxTokens;
      if (seq.wantsPromptLogprob(p) || wantsNext) {
        rows.push(into.logitRows.length);
        into.logitRows.push(at);
      } else rows.push(-1);
      into.tokens[at] = (p < known ? seq.tokens[p] : seq.drafts[p - known]) as number;
      into.positions[at] = p;
      into.blockTables[at] = seq.tables;
      at++;
    }
  });
  return into;
}

/** Bytes of the kernels' shared memory an engine's plans may take for their buffers (never freed). */
const PLAN_MEMORY_BYTES = 64 << 20;

/** Bytes of ordinary memory the buffers of unplanned steps may keep between steps. */
const UNPLANNED_BYTES = 32 << 20;

/**
 * One decode step's work planned once per batch shape (how many sequences): its batch arrays,
 * refilled in place, and the buffers its blocks take, in the order they take them (StepScratch),
 * the first of them in the kernels' shared memory so the matmuls read and write them in place. A
 * step of a shape seen before replays that shape's plan; a new shape plans anew. A plan is kept
 * for each shape (at most max_num_seqs of them); the shared memory they take is bounded by
 * PLAN_MEMORY_BYTES, past which their buffers are ordinary arrays. Only steps of one token per
 * sequence are planned; a step with a prompt chunk (prefill, a recomputation after preemption) or
 * drafts to verify is laid out afresh (its buffers from one scratch shared by such steps), as
 * every step is without replay.
 */
export class StepPlans {
  private readonly plans = new Map<number, { batch: StepBatch; scratch: StepScratch }>();
  private readonly memory: PlanMemory;
  private replayedSteps = 0;
  /**
   * The buffers of steps that are not planned (prompt chunks, drafts to verify), reused by the
   * next such step where its shape matches, up to UNPLANNED_BYTES: a short prompt's step otherwise
   * leaves megabytes of arrays to the garbage collector, whose full collections then pause decode.
   */
  private readonly unplanned = new StepScratch(undefined, UNPLANNED_BYTES);

  constructor(
    private readonly cache: CacheManager,
    pool: MatmulPool,
  ) {
    this.memory = pool.planMemory(PLAN_MEMORY_BYTES);
  }

  /** Decode shapes planned so far, and steps that replayed a plan. */
  get counts(): { readonly plans: number; readonly replayedSteps: number } {
    return { plans: this.plans.size, replayedSteps: this.replayedSteps };
  }

  /** `chunks` laid out, with the scratch to run them on when the step is planned (else none). */
  layOut(chunks: readonly Chunk[], planned: boolean): { batch: StepBatch; scratch?: StepScratch } {
    const tokens = chunks.reduce((s, c) => s + c.count, 0);
    if (!planned || tokens !== chunks.length) {
      const batch = layOut(chunks, this.cache, emptyBatch(tokens, chunks.length));
      if (!planned) return { batch };
      this.unplanned.begin();
      return { batch, scratch: this.unplanned };
    }
    let plan = this.plans.get(tokens);
    if (plan === undefined) {
      plan = { batch: emptyBatch(tokens, tokens), scratch: new StepScratch(this.memory) };
      this.plans.set(tokens, plan);
    } else this.replayedSteps++;
    plan.scratch.begin();
    return { batch: layOut(chunks, this.cache, plan.batch), scratch: plan.scratch };
  }
}
