import type { MatmulPool } from "../kernels/pool.js";
import type { CausalLM } from "../model/causal-lm.js";
import type { ForwardTap } from "../model/model.js";
import { REPLAY_SWITCH } from "../model/step-scratch.js";
import type { GeneratedToken } from "../request.js";
import { logprobsOf, type SamplingHistory, sampleToken } from "../sampler.js";
import type { CacheManager } from "./cache-manager.js";
import type { Chunk, Sequence } from "./sequence.js";
import { StepPlans } from "./step-plan.js";

/**
 * A step's logits and, for each chunk, the logit row of each of its tokens (-1: none asked); the
 * residual stream of every token (a draft head's input) and each chunk's first token in it.
 */
export interface StepLogits {
  readonly logits: Float32Array;
  readonly rowsOf: readonly (readonly number[])[];
  readonly streams: Float32Array;
  readonly firstOf: readonly number[];
}

/**
 * Runs the model: flattens a step's chunks into one batch (tokens, positions, block tables,
 * slots), asks for logits only where a prompt logprob or the next token is wanted, and turns
 * logits into prompt logprobs and sampled tokens.
 */
export class ModelRunner {
  readonly vocabSize: number;
  private readonly logprobScratch: Float64Array;
  private readonly plans: StepPlans;
  /** Whether decode steps replay their shape's plan (the `replay` switch). */
  private readonly replay: boolean;

  constructor(
    private readonly network: CausalLM,
    private readonly pool: MatmulPool,
    private readonly switches: ReadonlyMap<string, string>,
    private readonly cache: CacheManager,
    private readonly tap?: ForwardTap,
  ) {
    this.vocabSize = network.vocabSize;
    this.logprobScratch = new Float64Array(network.vocabSize);
    this.plans = new StepPlans(cache, pool);
    this.replay = switches.get(REPLAY_SWITCH.name) === "on";
  }

  run(chunks: readonly Chunk[]): StepLogits {
    const { batch, scratch } = this.plans.layOut(chunks, this.replay);
    const { logits, streams } = this.network.step(
      {
        batch,
        pool: this.pool,
        switches: this.switches,
        ...(scratch ? { scratch } : {}),
        ...(this.tap ? { tap: this.tap } : {}),
      },
      this.cache.storage,
    );
    return { logits, rowsOf: batch.rowsOf, streams, firstOf: batch.sequences.map((s) => s.first) };
  }

  /** Decode shapes planned and steps replayed so far (both 0 with replay off). */
  get replayCounts(): StepPlans["counts"] {
    return this.plans.counts;
  }

  /** Appends the prompt logprobs of `chunk`'s positions that have a logit row in `rows`. */
  recordPromptLogprobs({ seq, start, count }: Chunk, rows: readonly number[], logits: Float32Array): void {
    const V = this.vocabSize;
    for (let i = 0; i < count; i++) {
      const p = start + i;
      const row = rows[i] as number;
      const logprobs = seq.promptLogprobs;
      if (row < 0 || logprobs === undefined || !seq.wantsPromptLogprob(p) || logprobs.length !== p + 1)
        continue;
      const next = seq.tokens[p + 1] as number;
      const lp = logprobsOf(logits, row * V, V, next, seq.request.promptLogprobs ?? 0, this.logprobScratch);
      logprobs.push({
        tokenId: next,
        logprob: lp.logprob,
        rank: lp.rank,
        ...(lp.top.length > 0 ? { top: lp.top } : {}),
      });
    }
  }

  /** Samples `seq`'s next token from the logits at offset `row` (its min_tokens keeping stops out). */
  sample(seq: Sequence, logits: Float32Array, row: number): GeneratedToken {
    const V = this.vocabSize;
    const tokenId = sampleToken(logits, row, V, seq.request.sampling ?? {}, seq.rng, samplingHistory(seq));
    return this.describe(seq, logits, row, tokenId);
  }

  /**
   * `tokenId` as `seq` emits it from the logits at offset `row`: with its logprob, rank and top
   * where the request asked for logprobs, else alone (a log-softmax over the vocabulary a token is
   * a few percent of a 16-stream decode step's serial part).
   */
  describe(seq: Sequence, logits: Float32Array, row: number, tokenId: number): GeneratedToken {
    const topN = seq.request.logprobs;
    if (topN === undefined) return { tokenId };
    const lp = logprobsOf(logits, row, this.vocabSize, tokenId, topN, this.logprobScratch);
    return { tokenId, logprob: lp.logprob, rank: lp.rank, top: lp.top };
  }
}

/** What `seq` has seen, for penalties and bad words, and its stops banned before min_tokens. */
export function samplingHistory(seq: Sequence): SamplingHistory {
  return {
    promptTokenIds: seq.request.promptTokenIds,
    outputTokenIds: seq.outputTokenIds,
    ...(seq.numGenerated < (seq.request.minTokens ?? 0) ? { banned: seq.stopIds } : {}),
  };
}
