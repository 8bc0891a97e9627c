import type { LayerStorage } from "../cache/storage.js";
import type { MatmulPool } from "../kernels/pool.js";
import type { DraftModel } from "../model/draft-model.js";
import type { ForwardBatch, SequenceRun } from "../model/model.js";
import { GREEDY_TEMPERATURE, sampleFrom, sampleToken, tokenProbabilities } from "../sampler.js";
import type { CacheManager } from "./cache-manager.js";
import { type StepLogits, samplingHistory } from "./model-runner.js";
import { verifyDraft } from "./rejection-sampling.js";
import type { Chunk, Sequence } from "./sequence.js";

/** vLLM's spec-decode counters (vllm/v1/spec_decode/metrics.py, SpecDecodingStats). */
export interface SpecDecodeStats {
  /** Sequence-steps that verified at least one draft. */
  readonly numDrafts: number;
  readonly numDraftTokens: number;
  readonly numAcceptedTokens: number;
  /** Accepted drafts by their position in the draft (0 first). */
  readonly acceptedPerPosition: readonly number[];
}

/** One row of a draft-head step: a sequence, where its rows start, the drafts it still wants. */
interface DraftRow {
  readonly seq: Sequence;
  readonly want: number;
  /** The residual stream row of its last draft-head output. */
  stream: Float32Array;
}

/**
 * Speculative decoding with a draft head (an MTP layer): after each step it runs the head over the
 * positions the step computed, then drafts up to `k` tokens per decoding sequence, one head step
 * per token; the next step's chunk verifies them (ModelRunner) and `verify` keeps what the target
 * model would have emitted. Greedy verification keeps a draft where it equals the target's greedy
 * token, so the output is the target's bit for bit; sampled verification follows the
 * rejection-sampling rule (rejection-sampling.ts), which leaves the distribution unchanged.
 * Rolled-back positions need nothing undone: every state is written by position, so the next step
 * rewrites them, and a ring holds the window plus a whole chunk (k + 1 tokens at most).
 */
export class Drafter {
  private numDrafts = 0;
  private numDraftTokens = 0;
  private numAcceptedTokens = 0;
  private readonly acceptedPerPosition: number[];

  constructor(
    private readonly head: DraftModel,
    private readonly storage: LayerStorage,
    private readonly pool: MatmulPool,
    private readonly switches: ReadonlyMap<string, string>,
    private readonly cache: CacheManager,
    private readonly vocab: number,
    private readonly streamWidth: number,
    readonly k: number,
    private readonly maxModelLen: number,
  ) {
    this.acceptedPerPosition = new Array(k).fill(0);
  }

  stats(): SpecDecodeStats {
    return {
      numDrafts: this.numDrafts,
      numDraftTokens: this.numDraftTokens,
      numAcceptedTokens: this.numAcceptedTokens,
      acceptedPerPosition: [...this.acceptedPerPosition],
    };
  }

  /**
   * The token `seq` emits from the logits at offset `row`, which verify its draft `j`: the draft
   * itself when kept (`accepted`), else the target's own choice there.
   */
  verify(seq: Sequence, logits: Float32Array, row: number, j: number): { token: number; accepted: boolean } {
    const draft = seq.drafts[j] as number;
    const params = seq.request.sampling ?? {};
    if ((params.temperature ?? 1) < GREEDY_TEMPERATURE) {
      const token = sampleToken(logits, row, this.vocab, params, seq.rng, samplingHistory(seq));
      return { token, accepted: token === draft };
    }
    const p = tokenProbabilities(logits, row, this.vocab, params, samplingHistory(seq));
    return verifyDraft(p, seq.draftProbs[j] as Float64Array, draft, seq.rng);
  }

  /** Counts one sequence-step's verification: `offered` drafts, the first `accepted` kept. */
  record(offered: number, accepted: number): void {
    if (offered === 0) return;
    this.numDrafts++;
    this.numDraftTokens += offered;
    this.numAcceptedTokens += accepted;
    for (let j = 0; j < accepted; j++) this.acceptedPerPosition[j] = (this.acceptedPerPosition[j] ?? 0) + 1;
  }

  /**
   * Runs the head over each drafting chunk's computed positions p (the token at p + 1 beside the
   * target's stream at p), then drafts for every sequence now decoding whose verification fits
   * the cache, its max_tokens and max_model_len.
   */
  propose(chunks: readonly Chunk[], step: StepLogits): void {
    const W = this.streamWidth;
    const tokens: number[] = [];
    const positions: number[] = [];
    const blockTables: (readonly (readonly number[])[])[] = [];
    const sequences: SequenceRun[] = [];
    const logitRows: number[] = [];
    const previous: Float32Array[] = [];
    const rows: DraftRow[] = [];
    chunks.forEach(({ seq, start }, ci) => {
      const end = Math.min(seq.numComputed, seq.tokens.length - 1);
      if (!seq.drafting || seq.status !== "running" || end <= start) return;
      sequences.push({ first: tokens.length, count: end - start, slot: this.cache.slotOf(seq) });
      const first = step.firstOf[ci] as number;
      for (let p = start; p < end; p++) {
        tokens.push(seq.tokens[p + 1] as number);
        positions.push(p);
        blockTables.push(seq.tables);
        const t = first + p - start;
        previous.push(step.streams.subarray(t * W, (t + 1) * W));
      }
      const want = this.wanted(seq);
      if (want > 0) {
        logitRows.push(tokens.length - 1);
        rows.push({ seq, want, stream: new Float32Array(0) });
      }
    });
    if (tokens.length === 0) return;
    let out = this.run({ tokens, positions, blockTables, sequences, logitRows }, concat(previous, W));
    for (let j = 0; rows.length > 0; j++) {
      rows.forEach((r, i) => {
        const t = (j === 0 ? logitRows[i] : i) as number;
        r.stream = out.streams.slice(t * W, (t + 1) * W);
        this.choose(r.seq, out.logits, i * this.vocab);
      });
      const next = rows.filter((r) => r.want > j + 1);
      rows.length = 0;
      rows.push(...next);
      if (rows.length === 0) break;
      const batch: ForwardBatch = {
        tokens: rows.map((r) => r.seq.drafts[j] as number),
        positions: rows.map((r) => r.seq.tokens.length - 1 + j),
        blockTables: rows.map((r) => r.seq.tables),
        sequences: rows.map((r, i) => ({ first: i, count: 1, slot: this.cache.slotOf(r.seq) })),
        logitRows: rows.map((_, i) => i),
      };
      out = this.run(
        batch,
        concat(
          rows.map((r) => r.stream),
          W,
        ),
      );
    }
  }

  /** Drafts `seq` may have now: none unless it is decoding; within k, its limits and the cache. */
  private wanted(seq: Sequence): number {
    if (seq.status !== "running" || seq.numComputed !== seq.tokens.length - 1) return 0;
    const want = Math.min(
      this.k,
      seq.request.maxTokens - seq.numGenerated - 1,
      this.maxModelLen - seq.tokens.length - 1,
    );
    if (want <= 0 || !this.cache.tryAllocate(seq, seq.tokens.length + want)) return 0;
    return want;
  }

  /** Appends `seq`'s next draft from the head's logits at `row`: greedy, or drawn (its distribution kept). */
  private choose(seq: Sequence, logits: Float32Array, row: number): void {
    const params = seq.request.sampling ?? {};
    const history = samplingHistory(seq);
    if ((params.temperature ?? 1) < GREEDY_TEMPERATURE) {
      seq.drafts.push(sampleToken(logits, row, this.vocab, params, seq.rng, history));
      return;
    }
    const q = tokenProbabilities(logits, row, this.vocab, params, history);
    seq.drafts.push(sampleFrom(q, seq.rng));
    seq.draftProbs.push(q);
  }

  private run(batch: ForwardBatch, previous: Float32Array) {
    return this.head.forward({ batch, pool: this.pool, switches: this.switches }, this.storage, previous);
  }
}

/** Rows of `width` values, one after another. */
function concat(rows: readonly Float32Array[], width: number): Float32Array {
  const out = new Float32Array(rows.length * width);
  rows.forEach((r, i) => {
    out.set(r, i * width);
  });
  return out;
}
