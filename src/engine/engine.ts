import { BringupError } from "../common/errors.js";
import type { LayerStorage } from "./cache/storage.js";
import { CacheManager } from "./core/cache-manager.js";
import { Drafter } from "./core/drafting.js";
import { ModelRunner } from "./core/model-runner.js";
import { type EngineLimits, type EngineOptions, type EngineStats, resolveLimits } from "./core/options.js";
import { Scheduler } from "./core/scheduler.js";
import { Sequence } from "./core/sequence.js";
import { validateRequest } from "./core/validate-request.js";
import { MatmulPool } from "./kernels/pool.js";
import { type KernelSwitches, refuseFp8Scaled } from "./kernels/switches.js";
import { type DraftModel, isDraftModel } from "./model/draft-model.js";
import type { LoadedModel } from "./model/loaded-model.js";
import { OutputQueue } from "./output-queue.js";
import type { FinishReason, GeneratedToken, GenerateRequest, StepOutput } from "./request.js";

export type { EngineLimits, EngineOptions, EngineStats, KvGroupLimits } from "./core/options.js";

/**
 * The reference engine: continuous batching over a paged KV cache. Each step runs every running
 * sequence's next token together with chunks of waiting prompts; when blocks run out, the most
 * recently admitted sequence is preempted (its blocks freed, recomputed later). The parts: the
 * scheduler (core/scheduler.ts), the block and slot manager (core/cache-manager.ts), the model
 * runner (core/model-runner.ts) and the sequences (core/sequence.ts); this class joins them to
 * requests' output streams.
 */
export class Engine {
  readonly model: LoadedModel;
  readonly limits: EngineLimits;
  private readonly pool: MatmulPool;
  private readonly cache: CacheManager;
  private readonly scheduler: Scheduler;
  private readonly runner: ModelRunner;
  /** Speculative decoding's draft head at work, when it is on. */
  private readonly drafter: Drafter | undefined;
  private nextId = 0;
  private wake: (() => void) | undefined;
  private closed = false;
  private readonly loop: Promise<void>;
  private promptTokensTotal = 0;
  private generationTokensTotal = 0;
  private readonly stepListeners = new Set<(tokens: number) => void>();
  /** The step under way: vLLM's tokens of the iteration, and whether any sequence had an output. */
  private stepTokens = 0;
  private stepHadOutput = false;

  constructor(model: LoadedModel, options: EngineOptions = {}) {
    this.model = model;
    const head = draftHead(model, options.speculativeTokens ?? 0);
    refuseFp8Scaled(model.model.switches, options.switches ?? {});
    const { limits, switches, plan, units } = resolveLimits(model.model, model.config, options, (sw) =>
      head ? [head.states(sw)] : [],
    );
    this.limits = limits;
    this.cache = new CacheManager(plan, units);
    this.scheduler = new Scheduler(limits, this.cache);
    const mxfp4 = switches.get("mxfp4") as KernelSwitches["mxfp4"] | undefined;
    const fp8 = switches.get("fp8") as KernelSwitches["fp8"] | undefined;
    this.pool = new MatmulPool(options.threads, {
      ...(options.simd !== undefined ? { simd: options.simd } : {}),
      ...(mxfp4 !== undefined ? { mxfp4 } : {}),
      ...(fp8 !== undefined ? { fp8 } : {}),
    });
    this.runner = new ModelRunner(model.model, this.pool, switches, this.cache, options.tap);
    const k = options.speculativeTokens ?? 0;
    if (head !== undefined) {
      if (k + 1 > this.cache.maxChunkTokens)
        throw new BringupError(
          "ENGINE_OPTIONS_INVALID",
          `speculative_tokens ${k} verifies ${k + 1} tokens a step, more than the ${this.cache.maxChunkTokens} the smallest sliding-window ring holds in flight; lower it.`,
          { subject: "speculative_tokens" },
        );
      this.drafter = new Drafter(
        head,
        this.cache.storage[model.model.layers.length] as LayerStorage,
        this.pool,
        switches,
        this.cache,
        this.runner.vocabSize,
        model.model.residual.streams * model.model.hiddenSize,
        k,
        limits.maxModelLen,
      );
    }
    this.loop = this.run();
  }

  /** The kernels this engine's matmuls run (SIMD, fused multiply-add, the MXFP4 and FP8 paths). */
  get kernels(): Pick<KernelSwitches, "simd" | "fma" | "mxfp4" | "fp8"> {
    return { simd: this.pool.simd, fma: this.pool.fma, mxfp4: this.pool.mxfp4, fp8: this.pool.fp8 };
  }

  /** Decode shapes planned and decode steps that replayed a plan (the `replay` switch; 0 when off). */
  get replayCounts(): { readonly plans: number; readonly replayedSteps: number } {
    return this.runner.replayCounts;
  }

  get tokenizer(): LoadedModel["tokenizer"] {
    return this.model.tokenizer;
  }

  /**
   * Queues a request and returns its output stream. Throws BringupError at once for a request that
   * can never run (empty prompt, over max_model_len, larger than the whole KV cache, bad parameters).
   * Aborting `signal` (or leaving the for-await loop) ends the stream with finish reason "abort"
   * and frees the request's KV blocks before the next step. `onScheduled` is told the seconds the
   * request waited before the scheduler first admitted it (vLLM's queue time).
   */
  submit(
    request: GenerateRequest,
    signal?: AbortSignal,
    onScheduled?: (queueSeconds: number) => void,
  ): AsyncIterableIterator<StepOutput> {
    return this.submitShared(
      request,
      [request.sampling?.seed],
      signal,
      onScheduled,
    )[0] as AsyncIterableIterator<StepOutput>;
  }

  /**
   * Queues `request` as one sequence per entry of `seeds` (sequence i samples with seeds[i];
   * undefined draws a random seed) and returns their output streams, in order. The prompt is
   * prefilled once: when it is computed, the first sequence takes its KV blocks and state slots and
   * the others get copies, then each samples on its own, so each stream equals that of a separate
   * request with its seed. A copy that finds no free blocks recomputes the prompt later, as after a
   * preemption. Leaving one stream aborts that sequence only; aborting `signal` aborts them all.
   * Throws like `submit`.
   */
  submitShared(
    request: GenerateRequest,
    seeds: readonly (number | bigint | undefined)[],
    signal?: AbortSignal,
    onScheduled?: (queueSeconds: number) => void,
  ): AsyncIterableIterator<StepOutput>[] {
    if (this.closed) throw new BringupError("ENGINE_CLOSED", "the engine has been closed; start a new one.");
    validateRequest(request, this.limits, this.cache, this.model.config.vocabSize);
    if (seeds.length === 0)
      throw new BringupError("INVALID_SAMPLING_PARAMS", "ask for at least one sequence.", { subject: "n" });
    const eos =
      this.model.tokenizer.eosTokenIds.length > 0
        ? this.model.tokenizer.eosTokenIds
        : this.model.config.eosTokenIds;
    const pools = this.cache.numPools;
    const lead = seeds.length > 1 ? new Sequence(this.nextId++, request, undefined, pools, eos) : undefined;
    const sequences = seeds.map((seed) => {
      let seq: Sequence | undefined;
      const queue = new OutputQueue<StepOutput>(() => {
        if (seq) this.abort(seq);
      });
      const sampling = { ...request.sampling, ...(seed !== undefined ? { seed } : {}) };
      seq = new Sequence(this.nextId++, { ...request, sampling }, queue, pools, eos);
      seq.lead = lead;
      // Forks share a prompt the lead computes, the draft head's state of it too: they do not draft.
      seq.drafting = this.drafter !== undefined && lead === undefined;
      return seq;
    });
    const first = lead ?? (sequences[0] as Sequence);
    if (lead) lead.forks = [...sequences];
    first.onScheduled = onScheduled;
    if (signal?.aborted) {
      for (const seq of sequences) {
        seq.status = "finished";
        seq.queue?.push(seq.output(undefined, "abort"));
        seq.queue?.close();
      }
    } else {
      signal?.addEventListener(
        "abort",
        () => {
          for (const seq of sequences) this.abort(seq);
        },
        { once: true },
      );
      this.scheduler.add(first);
      this.wake?.();
    }
    return sequences.map((seq) => seq.queue as OutputQueue<StepOutput>);
  }

  stats(): EngineStats {
    let used = 0;
    let total = 0;
    let slotsUsed = 0;
    let slotsTotal = 0;
    for (const u of this.cache.usage()) {
      if (u.pool.pool === "slots") {
        slotsUsed += u.used;
        slotsTotal += u.total;
      } else {
        used += u.used;
        total += u.total;
      }
    }
    return {
      running: this.scheduler.running.length,
      waiting: this.scheduler.waiting.length,
      kvBlocksUsed: used,
      kvBlocksTotal: total,
      stateSlotsUsed: slotsUsed,
      stateSlotsTotal: slotsTotal,
      kvCacheUsage: this.cache.bytesUsed(),
      kvTokenCapacity: this.limits.kvTokenCapacity,
      blockSize: this.limits.blockSize,
      preemptions: this.scheduler.preemptions,
      promptTokensTotal: this.promptTokensTotal,
      generationTokensTotal: this.generationTokensTotal,
      ...(this.drafter !== undefined ? { specDecode: this.drafter.stats() } : {}),
    };
  }

  /**
   * Tells `listener`, after each step that gave some sequence an output, that step's tokens as
   * vLLM's `vllm:iteration_tokens_total` counts them (vllm/v1/metrics/stats.py,
   * IterationStats.update_from_output): each token generated, plus the whole prompt of each
   * sequence that got its first token (a prompt prefilled in chunks counts once, in the step that
   * ends it; a recomputation after preemption does not count again). Returns the unsubscribe.
   */
  onStep(listener: (tokens: number) => void): () => void {
    this.stepListeners.add(listener);
    return () => this.stepListeners.delete(listener);
  }

  /** Aborts every request, stops the loop and the matmul workers. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const seq of [...this.scheduler.running, ...this.scheduler.waiting]) this.abort(seq);
    this.wake?.();
    await this.loop;
    await this.pool.close();
  }

  private abort(seq: Sequence): void {
    if (seq.status === "finished") return;
    this.finish(seq, "abort", undefined);
  }

  private finish(seq: Sequence, reason: FinishReason, token: GeneratedToken | undefined): void {
    this.stepHadOutput = true;
    this.scheduler.remove(seq);
    seq.status = "finished";
    seq.queue?.push(seq.output(token, reason));
    seq.queue?.close();
    // A lead's sequences end with it; a lead whose sequences all ended has nothing left to do.
    const forks = seq.forks;
    seq.forks = undefined;
    for (const f of forks ?? []) this.finish(f, reason, undefined);
    const lead = seq.lead;
    seq.lead = undefined;
    if (lead?.forks !== undefined) {
      lead.forks = lead.forks.filter((f) => f !== seq);
      if (lead.forks.length === 0) this.finish(lead, "abort", undefined);
    }
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      if (this.scheduler.idle) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        continue;
      }
      try {
        this.step();
      } catch (error) {
        for (const seq of this.scheduler.drain()) {
          seq.status = "finished";
          for (const s of [seq, ...(seq.forks ?? [])]) s.queue?.fail(error);
        }
      }
      // Let aborts, new requests and consumers run between steps.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private step(): void {
    const chunks = this.scheduler.schedule();
    if (chunks.length === 0) return;
    this.stepTokens = 0;
    this.stepHadOutput = false;
    const step = this.runner.run(chunks);
    const { logits, rowsOf } = step;
    const V = this.runner.vocabSize;
    chunks.forEach((chunk, ci) => {
      const { seq, start, count } = chunk;
      const rows = rowsOf[ci] as readonly number[];
      if (seq.status !== "running") return;
      if (start < seq.numPrompt) this.promptTokensTotal += Math.min(count, seq.numPrompt - start);
      seq.numComputed = Math.min(start + count, seq.tokens.length);
      this.runner.recordPromptLogprobs(chunk, rows, logits);
      if (seq.numComputed < seq.tokens.length) return;
      if (seq.drafts.length > 0) {
        this.verify(seq, rows, logits);
        return;
      }
      const row = (rows[count - 1] as number) * V;
      for (const s of seq.forks !== undefined ? this.scheduler.fork(seq) : [seq])
        this.next(s, () => this.runner.sample(s, logits, row));
    });
    this.drafter?.propose(chunks, step);
    if (this.stepHadOutput) for (const listener of this.stepListeners) listener(this.stepTokens);
  }

  /**
   * Emits what the target model makes of `seq`'s drafts, verified in this step's chunk (its last
   * rows): each kept draft, then the target's own token where one is not (or after the last).
   * Positions past the last kept draft are rolled back: numComputed stays before them.
   */
  private verify(seq: Sequence, rows: readonly number[], logits: Float32Array): void {
    const drafter = this.drafter as Drafter;
    const V = this.runner.vocabSize;
    const offered = seq.drafts.length;
    const first = rows.length - 1 - offered;
    let accepted = 0;
    for (let j = 0; j <= offered && seq.status === "running"; j++) {
      const row = (rows[first + j] as number) * V;
      if (j === offered) {
        this.next(seq, () => this.runner.sample(seq, logits, row));
        break;
      }
      const { token, accepted: kept } = drafter.verify(seq, logits, row, j);
      this.next(seq, () => this.runner.describe(seq, logits, row, token));
      if (!kept) break;
      accepted++;
      seq.numComputed++;
    }
    drafter.record(offered, accepted);
    seq.drafts = [];
    seq.draftProbs = [];
  }

  /** Emits `seq`'s next token, which `choose` gives, or ends it at max_tokens. */
  private next(seq: Sequence, choose: () => GeneratedToken): void {
    if (seq.numGenerated >= seq.request.maxTokens) {
      this.finish(seq, "length", undefined);
      return;
    }
    const token = choose();
    seq.tokens.push(token.tokenId);
    seq.outputTokenIds.push(token.tokenId);
    if (seq.numGenerated === 0) this.stepTokens += seq.numPrompt;
    seq.numGenerated++;
    this.generationTokensTotal++;
    this.stepTokens++;
    this.stepHadOutput = true;
    if (seq.stopIds.has(token.tokenId)) this.finish(seq, "stop", token);
    else if (seq.numGenerated >= seq.request.maxTokens || seq.tokens.length >= this.limits.maxModelLen)
      this.finish(seq, "length", token);
    else seq.queue?.push(seq.output(token, null));
  }
}

/**
 * The draft head of `model` when `k` tokens are to be drafted (undefined when k is 0);
 * ENGINE_OPTIONS_INVALID for a k that is not a whole number, SPECULATIVE_UNAVAILABLE naming the
 * field or tensor when the model has no head to draft with.
 */
function draftHead(model: LoadedModel, k: number): DraftModel | undefined {
  if (!Number.isInteger(k) || k < 0)
    throw new BringupError(
      "ENGINE_OPTIONS_INVALID",
      `speculative_tokens must be an integer >= 0, got ${k}.`,
      {
        subject: "speculative_tokens",
      },
    );
  if (k === 0) return undefined;
  const head = model.model.drafter;
  if (isDraftModel(head)) return head;
  throw new BringupError(
    "SPECULATIVE_UNAVAILABLE",
    `${model.name}: speculative decoding drafts with the model's MTP layer, but ${head.reason}; serve it without --speculative-tokens, or serve a checkpoint with its MTP layer.`,
    { subject: head.subject },
  );
}
