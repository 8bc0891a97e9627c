import { randomBytes } from "node:crypto";
import type { OutputQueue } from "../output-queue.js";
import type { GeneratedToken, GenerateRequest, ScoredToken, StepOutput } from "../request.js";
import { SeededStream } from "../sampler.js";

/**
 * One sequence of a request: its tokens (prompt, then generated), how many are computed, the
 * blocks or slot it holds in each state pool, and where its outputs go.
 */
export class Sequence {
  readonly tokens: number[];
  readonly numPrompt: number;
  numComputed = 0;
  numGenerated = 0;
  /** The units it holds in each pool, by pool index: blocks in a block group, its slot in the slot pool. */
  readonly tables: number[][];
  status: "waiting" | "running" | "finished" = "waiting";
  promptLogprobs: (ScoredToken | null)[] | undefined;
  promptLogprobsSent = false;
  readonly rng: SeededStream;
  readonly stopIds: ReadonlySet<number>;
  /**
   * A lead of shared sequences: it prefills the prompt once and produces no output itself; when its
   * prompt is computed it hands its KV to these sequences (forked) and leaves. Undefined after that.
   */
  forks: Sequence[] | undefined;
  /** Of a sequence still waiting for its lead to fork it. */
  lead: Sequence | undefined;
  readonly arrivedAt = performance.now();
  onScheduled: ((queueSeconds: number) => void) | undefined;
  /** When the scheduler first admitted it (vLLM's queue time ends there). */
  scheduledAt: number | undefined;
  /** The generated tokens (a view for penalties and bad words). */
  readonly outputTokenIds: number[] = [];
  /**
   * Tokens the draft head proposed after `tokens`, which the next step verifies (empty when not
   * drafting), and for sampled requests the distribution each was drawn from.
   */
  drafts: number[] = [];
  /** Whether a draft head drafts for it (speculative decoding on, and a request of one sequence). */
  drafting = false;
  draftProbs: Float64Array[] = [];

  constructor(
    readonly id: number,
    readonly request: GenerateRequest,
    /** Where its outputs go (a lead has none: its forks report). */
    readonly queue: OutputQueue<StepOutput> | undefined,
    pools: number,
    eos: readonly number[],
  ) {
    this.tokens = [...request.promptTokenIds];
    this.numPrompt = this.tokens.length;
    this.tables = Array.from({ length: pools }, () => []);
    this.rng = new SeededStream(request.sampling?.seed ?? randomBytes(8).readBigUInt64LE());
    this.stopIds = new Set([...(request.ignoreEos ? [] : eos), ...(request.stopTokenIds ?? [])]);
    if (request.promptLogprobs !== undefined) this.promptLogprobs = [null];
  }

  /** Sequences the lead stands for (its forks), or 1: the room it takes among max_num_seqs. */
  get width(): number {
    return this.forks?.length ?? 1;
  }

  /** Whether position `p`'s next-token logits are wanted for prompt logprobs not yet sent. */
  wantsPromptLogprob(p: number): boolean {
    return this.promptLogprobs !== undefined && !this.promptLogprobsSent && p < this.numPrompt - 1;
  }

  /** The stream item for this sequence now: `token` (if any), and its prompt logprobs once complete. */
  output(token: GeneratedToken | undefined, finishReason: StepOutput["finishReason"]): StepOutput {
    const out: StepOutput = {
      ...(token ? { token } : {}),
      finishReason,
      ...(this.promptLogprobs !== undefined &&
      !this.promptLogprobsSent &&
      this.promptLogprobs.length === this.numPrompt
        ? { promptLogprobs: this.promptLogprobs }
        : {}),
      numPromptTokens: this.numPrompt,
      numGeneratedTokens: this.numGenerated,
    };
    if (out.promptLogprobs) this.promptLogprobsSent = true;
    return out;
  }
}

/** A run of one sequence's tokens scheduled for a step: positions start .. start + count - 1. */
export interface Chunk {
  readonly seq: Sequence;
  readonly start: number;
  readonly count: number;
}
