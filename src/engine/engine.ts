import { randomBytes } from "node:crypto";
import type { ErrorCode } from "../common/error-catalogue.js";
import { BringupError } from "../common/errors.js";
import { BlockManager } from "./cache/block-manager.js";
import {
  type KvCacheGroup,
  kvBytesPerSequence,
  kvTokenCapacity,
  planKvCache,
  splitKvBudget,
} from "./cache/capacity.js";
import { LayerKvCache } from "./cache/kv-cache.js";
import { type CacheSpec, KV_LAYOUT_NAMES, type KvLayout } from "./cache/spec.js";
import { StateSlotSpec, StateSlots } from "./cache/state-slots.js";
import { MatmulPool } from "./kernels/pool.js";
import type { KernelSwitches } from "./kernels/switches.js";
import type { CausalLM } from "./model/causal-lm.js";
import type { LoadedModel } from "./model/loaded-model.js";
import type { ForwardBatch, LayerStorage, SequenceRun } from "./model/model.js";
import { OutputQueue } from "./output-queue.js";
import type { FinishReason, GeneratedToken, GenerateRequest, StepOutput } from "./request.js";
import { logprobsOf, SeededStream, sampleToken, validateSampling } from "./sampler.js";

export interface EngineOptions {
  /** Most sequences running at once (default 64). */
  readonly maxNumSeqs?: number;
  /** Longest prompt + output, in tokens (default: the model's max_position_embeddings). */
  readonly maxModelLen?: number;
  /** Tokens per KV block (default 16). */
  readonly blockSize?: number;
  /**
   * KV cache memory budget in bytes (default: room for maxNumSeqs max-length sequences in the
   * chosen layout, at most 1 GiB).
   */
  readonly kvCacheBytes?: number;
  /**
   * How sliding-window layers keep their KV (default "window-sized"): only the window plus the
   * tokens in flight, as a ring of blocks; or "full": every position, with a sliding mask.
   */
  readonly kvLayout?: KvLayout;
  /** Most tokens one step runs (prefill is chunked to fit; default max(2048, maxNumSeqs)). */
  readonly maxNumBatchedTokens?: number;
  /** Threads for matmuls, this one included (default: all cores). */
  readonly threads?: number;
  /**
   * Use the WebAssembly SIMD matmul tile (default true where supported; BRINGUP_ENGINE_SIMD=0 also
   * turns it off). false gives the plain kernel, whose sums equal the scalar reference bit for bit.
   */
  readonly simd?: boolean;
  /** Values of the model's switches (its architecture declares them and their defaults). */
  readonly switches?: Readonly<Record<string, string>>;
}

/** Figures for /metrics. */
export interface EngineStats {
  readonly running: number;
  readonly waiting: number;
  /** KV blocks held by requests, summed over the paged cache groups. */
  readonly kvBlocksUsed: number;
  /** KV blocks in the cache, summed over the paged cache groups. */
  readonly kvBlocksTotal: number;
  /** Per-sequence state slots held by requests (0 when no layer keeps a state). */
  readonly stateSlotsUsed: number;
  /** Per-sequence state slots planned in the budget. */
  readonly stateSlotsTotal: number;
  /** Fraction of the KV cache's bytes held by requests (groups' blocks differ in size), 0 to 1. */
  readonly kvCacheUsage: number;
  /** Tokens of context the KV cache holds at max_model_len across all sequences (see EngineLimits). */
  readonly kvTokenCapacity: number;
  readonly blockSize: number;
  readonly preemptions: number;
  readonly promptTokensTotal: number;
  readonly generationTokensTotal: number;
}

/** The limits the engine runs under, resolved from EngineOptions. */
export interface EngineLimits {
  readonly maxNumSeqs: number;
  readonly maxModelLen: number;
  readonly blockSize: number;
  /** KV blocks summed over the paged cache groups. */
  readonly kvBlocks: number;
  /** Per-sequence state slots (as many sequences as may hold a recurrent state at once). */
  readonly stateSlots: number;
  readonly maxNumBatchedTokens: number;
  readonly kvLayout: KvLayout;
  /** The KV budget in bytes the groups were sized from. */
  readonly kvCacheBytes: number;
  /**
   * Tokens of context the cache holds at max_model_len: how many max-length sequences fit (the
   * fewest over groups), times the tokens one of them spans in full-storage blocks. With only
   * full-attention layers it is exactly kvBlocks x blockSize.
   */
  readonly kvTokenCapacity: number;
  /** One entry per group of layers sharing block tables. */
  readonly kvGroups: readonly KvGroupLimits[];
}

/** A cache group as the limits report it. */
export interface KvGroupLimits {
  /** The spec kind: "full", "sliding-window" (a ring), "sliding-mask", "state-slot". */
  readonly kind: string;
  readonly numLayers: number;
  readonly blocks: number;
  /** Blocks in the ring one sequence cycles through (0: no ring, it grows with the sequence). */
  readonly ringBlocks: number;
  readonly bytesPerBlock: number;
}

interface CacheGroup {
  readonly plan: KvCacheGroup;
  readonly blocks: BlockManager;
}

class Sequence {
  readonly tokens: number[];
  readonly numPrompt: number;
  numComputed = 0;
  numGenerated = 0;
  readonly tables: number[][];
  status: "waiting" | "running" | "finished" = "waiting";
  promptLogprobs: (GeneratedToken | null)[] | undefined;
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

  constructor(
    readonly id: number,
    readonly request: GenerateRequest,
    /** Where its outputs go (a lead has none: its forks report). */
    readonly queue: OutputQueue<StepOutput> | undefined,
    groups: number,
    eos: readonly number[],
  ) {
    this.tokens = [...request.promptTokenIds];
    this.numPrompt = this.tokens.length;
    this.tables = Array.from({ length: groups }, () => []);
    this.rng = new SeededStream(request.sampling?.seed ?? randomBytes(8).readBigUInt64LE());
    this.stopIds = new Set([...(request.ignoreEos ? [] : eos), ...(request.stopTokenIds ?? [])]);
    if (request.promptLogprobs !== undefined) this.promptLogprobs = [null];
  }
}

interface Chunk {
  readonly seq: Sequence;
  readonly start: number;
  readonly count: number;
}

/**
 * The reference engine: continuous batching over a paged KV cache. Each step runs every running
 * sequence's next token together with chunks of waiting prompts; when blocks run out, the most
 * recently admitted sequence is preempted (its blocks freed, recomputed later).
 */
export class Engine {
  readonly model: LoadedModel;
  readonly limits: EngineLimits;
  private readonly pool: MatmulPool;
  private readonly network: CausalLM;
  private readonly storage: LayerStorage[];
  private readonly switches: ReadonlyMap<string, string>;
  private readonly groups: CacheGroup[];
  /** The group of state slots, -1 when no layer keeps a per-sequence state. */
  private readonly slotGroup: number;
  private readonly maxChunkTokens: number;
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  private readonly logprobScratch: Float64Array;
  private nextId = 0;
  private wake: (() => void) | undefined;
  private closed = false;
  private readonly loop: Promise<void>;
  private preemptions = 0;
  private promptTokensTotal = 0;
  private generationTokensTotal = 0;

  constructor(model: LoadedModel, options: EngineOptions = {}) {
    this.model = model;
    const config = model.config;
    const opt = (name: string, value: number | undefined, fallback: number, min = 1): number => {
      const v = value ?? fallback;
      if (!Number.isInteger(v) || v < min) {
        throw new BringupError(
          "ENGINE_OPTIONS_INVALID",
          `${name} must be an integer >= ${min}, got ${value}.`,
          { subject: name },
        );
      }
      return v;
    };
    const maxNumSeqs = opt("max_num_seqs", options.maxNumSeqs, 64);
    const maxModelLen = opt("max_model_len", options.maxModelLen, config.maxPositionEmbeddings);
    const blockSize = opt("block_size", options.blockSize, 16);
    const maxNumBatchedTokens = opt(
      "max_num_batched_tokens",
      options.maxNumBatchedTokens,
      Math.max(2048, maxNumSeqs),
    );
    const kvLayout = options.kvLayout ?? "window-sized";
    if (!KV_LAYOUT_NAMES.includes(kvLayout)) {
      throw new BringupError(
        "ENGINE_OPTIONS_INVALID",
        `kv_layout must be one of ${KV_LAYOUT_NAMES.join(", ")}, got ${String(kvLayout)}.`,
        { subject: "kv_layout" },
      );
    }
    this.network = model.model;
    this.switches = resolveSwitches(this.network, options.switches ?? {});
    const states = this.network.statesUnder(this.switches);
    const plan = planKvCache(states, kvLayout, blockSize);
    const wanted = maxNumSeqs * kvBytesPerSequence(plan.groups, maxModelLen);
    const budget = opt("kv_cache_bytes", options.kvCacheBytes, Math.min(wanted, 1 << 30));
    const split = splitKvBudget(plan.groups, budget, maxModelLen);
    plan.groups.forEach((g, i) => {
      if ((split[i] as number) < 1) {
        const oneEach = plan.groups.reduce((s, x) => s + x.bytesPerBlock, 0);
        throw new BringupError(
          "KV_BUDGET_TOO_SMALL",
          `a KV budget of ${budget} bytes leaves no block of ${blockSize} tokens for the ${g.spec.kind} layers (one block in every cache group takes ${oneEach} bytes); raise it.`,
        );
      }
    });
    this.groups = plan.groups.map((g, i) => ({ plan: g, blocks: new BlockManager(split[i] as number) }));
    this.slotGroup = plan.groups.findIndex((g) => g.spec instanceof StateSlotSpec);
    this.limits = {
      maxNumSeqs,
      maxModelLen,
      blockSize,
      kvBlocks: split.reduce((a, b, i) => a + (i === this.slotGroup ? 0 : b), 0),
      stateSlots: this.slotGroup < 0 ? 0 : (split[this.slotGroup] as number),
      maxNumBatchedTokens,
      kvLayout,
      kvCacheBytes: budget,
      kvTokenCapacity: kvTokenCapacity(plan.groups, split, maxModelLen, blockSize),
      kvGroups: plan.groups.map((g, i) => ({
        kind: g.spec.kind,
        numLayers: g.layers.length,
        blocks: split[i] as number,
        ringBlocks: g.spec.ringBlocks,
        bytesPerBlock: g.bytesPerBlock,
      })),
    };
    // Each paged layer stores in its group's blocks but reads through its own spec (its mask).
    this.storage = states.map((state, i): LayerStorage => {
      const group = plan.layerGroups[i] as number;
      if (state.kind === "none") return {};
      const count = split[group] as number;
      if (state.kind === "slot") return { slots: new StateSlots(count, state.floats) };
      const spec = plan.layerSpecs[i] as CacheSpec;
      return {
        group,
        cache: new LayerKvCache(spec, count, state.numKvHeads, state.headDim, state.vHeadDim),
      };
    });
    // A sequence puts no more tokens in flight per step than its smallest ring allows.
    this.maxChunkTokens = Math.min(...plan.groups.map((g) => g.spec.maxChunkTokens));
    const mxfp4 = this.switches.get("mxfp4") as KernelSwitches["mxfp4"] | undefined;
    this.pool = new MatmulPool(options.threads, {
      ...(options.simd !== undefined ? { simd: options.simd } : {}),
      ...(mxfp4 !== undefined ? { mxfp4 } : {}),
    });
    this.logprobScratch = new Float64Array(this.network.vocabSize);
    this.loop = this.run();
  }

  /** The kernels this engine's matmuls run (SIMD, fused multiply-add, the MXFP4 path). */
  get kernels(): Pick<KernelSwitches, "simd" | "fma" | "mxfp4"> {
    return { simd: this.pool.simd, fma: this.pool.fma, mxfp4: this.pool.mxfp4 };
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
    this.validate(request);
    if (seeds.length === 0)
      throw new BringupError("INVALID_SAMPLING_PARAMS", "ask for at least one sequence.", { subject: "n" });
    const eos =
      this.model.tokenizer.eosTokenIds.length > 0
        ? this.model.tokenizer.eosTokenIds
        : this.model.config.eosTokenIds;
    const lead =
      seeds.length > 1 ? new Sequence(this.nextId++, request, undefined, this.groups.length, eos) : undefined;
    const sequences = seeds.map((seed) => {
      let seq: Sequence | undefined;
      const queue = new OutputQueue<StepOutput>(() => {
        if (seq) this.abort(seq);
      });
      const sampling = { ...request.sampling, ...(seed !== undefined ? { seed } : {}) };
      seq = new Sequence(this.nextId++, { ...request, sampling }, queue, this.groups.length, eos);
      seq.lead = lead;
      return seq;
    });
    const first = lead ?? (sequences[0] as Sequence);
    if (lead) lead.forks = [...sequences];
    first.onScheduled = onScheduled;
    if (signal?.aborted) {
      for (const seq of sequences) {
        seq.status = "finished";
        seq.queue?.push(this.output(seq, undefined, "abort"));
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
      this.waiting.push(first);
      this.wake?.();
    }
    return sequences.map((seq) => seq.queue as OutputQueue<StepOutput>);
  }

  stats(): EngineStats {
    let used = 0;
    let total = 0;
    let usedBytes = 0;
    let totalBytes = 0;
    this.groups.forEach((g, i) => {
      if (i !== this.slotGroup) {
        used += g.blocks.numUsed;
        total += g.blocks.numBlocks;
      }
      usedBytes += g.blocks.numUsed * g.plan.bytesPerBlock;
      totalBytes += g.blocks.numBlocks * g.plan.bytesPerBlock;
    });
    const slots = this.groups[this.slotGroup]?.blocks;
    return {
      running: this.running.length,
      waiting: this.waiting.length,
      kvBlocksUsed: used,
      kvBlocksTotal: total,
      stateSlotsUsed: slots?.numUsed ?? 0,
      stateSlotsTotal: slots?.numBlocks ?? 0,
      kvCacheUsage: usedBytes / totalBytes,
      kvTokenCapacity: this.limits.kvTokenCapacity,
      blockSize: this.limits.blockSize,
      preemptions: this.preemptions,
      promptTokensTotal: this.promptTokensTotal,
      generationTokensTotal: this.generationTokensTotal,
    };
  }

  /** Aborts every request, stops the loop and the matmul workers. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const seq of [...this.running, ...this.waiting]) this.abort(seq);
    this.wake?.();
    await this.loop;
    await this.pool.close();
  }

  private validate(r: GenerateRequest): void {
    const bad = (code: ErrorCode, message: string, subject?: string): never => {
      throw new BringupError(code, message, subject === undefined ? undefined : { subject });
    };
    const n = r.promptTokenIds.length;
    if (n === 0) bad("PROMPT_EMPTY", "the prompt has no tokens; send at least one.", "prompt");
    for (const id of r.promptTokenIds) {
      if (!Number.isInteger(id) || id < 0 || id >= this.model.config.vocabSize) {
        bad(
          "TOKEN_OUT_OF_RANGE",
          `prompt token id ${id} is outside the vocabulary (0..${this.model.config.vocabSize - 1}).`,
          "prompt",
        );
      }
    }
    if (!Number.isInteger(r.maxTokens) || r.maxTokens < 0)
      bad("INVALID_MAX_TOKENS", `max_tokens must be an integer >= 0, got ${r.maxTokens}.`, "max_tokens");
    const { maxModelLen, blockSize } = this.limits;
    const minTokens = r.minTokens ?? 0;
    if (!Number.isInteger(minTokens) || minTokens < 0 || minTokens > r.maxTokens)
      bad(
        "INVALID_MAX_TOKENS",
        `min_tokens must be an integer from 0 to max_tokens (${r.maxTokens}), got ${minTokens}.`,
        "min_tokens",
      );
    if (n + r.maxTokens > maxModelLen) {
      bad(
        "CONTEXT_TOO_LONG",
        `this model's maximum context length is ${maxModelLen} tokens, but ${n + r.maxTokens} were requested (${n} in the prompt, ${r.maxTokens} to generate); shorten the prompt or lower max_tokens.`,
        "max_tokens",
      );
    }
    for (const g of this.groups) {
      const need = g.plan.spec.blocksNeeded(n + r.maxTokens);
      if (need > g.blocks.numBlocks) {
        bad(
          "KV_CAPACITY_EXCEEDED",
          `this request needs ${need} KV blocks of ${blockSize} tokens for its ${g.plan.spec.kind} layers but the cache has ${g.blocks.numBlocks} for them; raise the KV memory budget or shorten the request.`,
          "max_tokens",
        );
      }
    }
    for (const [field, v] of [
      ["logprobs", r.logprobs],
      ["prompt_logprobs", r.promptLogprobs],
    ] as const) {
      if (v !== undefined && !(Number.isInteger(v) && v >= 0 && v <= this.model.config.vocabSize)) {
        bad(
          "INVALID_LOGPROBS",
          `${field} must be an integer between 0 and the vocabulary size, got ${v}.`,
          field,
        );
      }
    }
    validateSampling(r.sampling ?? {});
    const vocab = this.model.config.vocabSize;
    const outside = (ids: readonly number[] | undefined) =>
      ids?.find((id) => !Number.isInteger(id) || id < 0 || id >= vocab);
    if (outside(r.sampling?.allowedTokenIds) !== undefined)
      bad(
        "INVALID_SAMPLING_PARAMS",
        `allowed_token_ids has ${outside(r.sampling?.allowedTokenIds)}, outside the vocabulary (0..${vocab - 1}).`,
        "allowed_token_ids",
      );
  }

  private abort(seq: Sequence): void {
    if (seq.status === "finished") return;
    this.finish(seq, "abort", undefined);
  }

  private finish(seq: Sequence, reason: FinishReason, token: GeneratedToken | undefined): void {
    const queue = this.waiting.indexOf(seq);
    if (queue >= 0) this.waiting.splice(queue, 1);
    const run = this.running.indexOf(seq);
    if (run >= 0) this.running.splice(run, 1);
    this.freeBlocks(seq);
    seq.status = "finished";
    seq.queue?.push(this.output(seq, token, reason));
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

  private output(
    seq: Sequence,
    token: GeneratedToken | undefined,
    finishReason: FinishReason | null,
  ): StepOutput {
    const out: StepOutput = {
      ...(token ? { token } : {}),
      finishReason,
      ...(seq.promptLogprobs !== undefined &&
      !seq.promptLogprobsSent &&
      seq.promptLogprobs.length === seq.numPrompt
        ? { promptLogprobs: seq.promptLogprobs }
        : {}),
      numPromptTokens: seq.numPrompt,
      numGeneratedTokens: seq.numGenerated,
    };
    if (out.promptLogprobs) seq.promptLogprobsSent = true;
    return out;
  }

  private freeBlocks(seq: Sequence): void {
    seq.tables.forEach((table, g) => {
      (this.groups[g] as CacheGroup).blocks.release(table);
      table.length = 0;
    });
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      if (this.running.length === 0 && this.waiting.length === 0) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        continue;
      }
      try {
        this.step();
      } catch (error) {
        for (const seq of [...this.running, ...this.waiting]) {
          this.freeBlocks(seq);
          seq.status = "finished";
          for (const s of [seq, ...(seq.forks ?? [])]) s.queue?.fail(error);
        }
        this.running.length = 0;
        this.waiting.length = 0;
      }
      // Let aborts, new requests and consumers run between steps.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Blocks still to allocate in each group for `seq` to hold `numTokens` tokens. */
  private missingBlocks(seq: Sequence, numTokens: number): number[] {
    return this.groups.map((g, i) =>
      Math.max(0, g.plan.spec.blocksNeeded(numTokens) - (seq.tables[i] as number[]).length),
    );
  }

  private tryAllocate(seq: Sequence, numTokens: number): boolean {
    const missing = this.missingBlocks(seq, numTokens);
    if (!missing.every((n, i) => (this.groups[i] as CacheGroup).blocks.canAllocate(n))) return false;
    missing.forEach((n, i) => {
      (seq.tables[i] as number[]).push(...(this.groups[i] as CacheGroup).blocks.allocate(n));
    });
    return true;
  }

  private preempt(seq: Sequence): void {
    this.running.splice(this.running.indexOf(seq), 1);
    this.freeBlocks(seq);
    seq.numComputed = 0;
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

  private schedule(): Chunk[] {
    const chunks: Chunk[] = [];
    let budget = this.limits.maxNumBatchedTokens;
    for (const seq of [...this.running]) {
      if (seq.status !== "running" || budget === 0) continue;
      const count = Math.min(seq.tokens.length - seq.numComputed, budget, this.maxChunkTokens);
      let fits = this.tryAllocate(seq, seq.numComputed + count);
      while (!fits) {
        const victim = [...this.running].reverse().find((s) => !chunks.some((c) => c.seq === s));
        if (victim === undefined) break;
        this.preempt(victim);
        if (victim === seq) break;
        fits = this.tryAllocate(seq, seq.numComputed + count);
      }
      if (!fits) continue;
      chunks.push({ seq, start: seq.numComputed, count });
      budget -= count;
    }
    // A lead takes room for all its sequences (unless nothing else runs).
    const width = (seq: Sequence) => seq.forks?.length ?? 1;
    let runningWidth = this.running.reduce((sum, seq) => sum + width(seq), 0);
    while (this.waiting.length > 0 && budget > 0) {
      const seq = this.waiting[0] as Sequence;
      if (this.running.length > 0 && runningWidth + width(seq) > this.limits.maxNumSeqs) break;
      const count = Math.min(seq.tokens.length - seq.numComputed, budget, this.maxChunkTokens);
      if (!this.tryAllocate(seq, seq.numComputed + count)) break;
      this.waiting.shift();
      if (seq.scheduledAt === undefined) {
        seq.scheduledAt = performance.now();
        seq.onScheduled?.((seq.scheduledAt - seq.arrivedAt) / 1000);
      }
      seq.status = "running";
      this.running.push(seq);
      runningWidth += width(seq);
      chunks.push({ seq, start: seq.numComputed, count });
      budget -= count;
    }
    return chunks;
  }

  private step(): void {
    const chunks = this.schedule();
    if (chunks.length === 0) return;
    const tokens: number[] = [];
    const positions: number[] = [];
    const blockTables: (readonly (readonly number[])[])[] = [];
    const logitRows: number[] = [];
    const sequences: SequenceRun[] = [];
    /** For each chunk, the logit row of each of its tokens (-1 = none). */
    const rowsOf: number[][] = [];
    for (const { seq, start, count } of chunks) {
      const rows: number[] = [];
      sequences.push({
        first: tokens.length,
        count,
        slot: this.slotGroup < 0 ? -1 : ((seq.tables[this.slotGroup] as number[])[0] as number),
      });
      const completes = start + count === seq.tokens.length;
      for (let p = start; p < start + count; p++) {
        const wantsPrompt =
          seq.promptLogprobs !== undefined && !seq.promptLogprobsSent && p < seq.numPrompt - 1;
        const wantsNext =
          completes && p === seq.tokens.length - 1 && seq.numGenerated < seq.request.maxTokens;
        if (wantsPrompt || wantsNext) {
          rows.push(logitRows.length);
          logitRows.push(tokens.length);
        } else rows.push(-1);
        tokens.push(seq.tokens[p] as number);
        positions.push(p);
        blockTables.push(seq.tables);
      }
      rowsOf.push(rows);
    }
    const batch: ForwardBatch = { tokens, positions, blockTables, sequences, logitRows };
    const logits = this.network.forward({ batch, pool: this.pool, switches: this.switches }, this.storage);
    const V = this.network.vocabSize;
    chunks.forEach(({ seq, start, count }, ci) => {
      const rows = rowsOf[ci] as number[];
      if (seq.status !== "running") return;
      if (start < seq.numPrompt) this.promptTokensTotal += Math.min(count, seq.numPrompt - start);
      seq.numComputed = start + count;
      for (let i = 0; i < count; i++) {
        const p = start + i;
        const row = rows[i] as number;
        if (row < 0 || seq.promptLogprobs === undefined || seq.promptLogprobsSent || p >= seq.numPrompt - 1)
          continue;
        if (seq.promptLogprobs.length !== p + 1) continue;
        const next = seq.tokens[p + 1] as number;
        const lp = logprobsOf(logits, row * V, V, next, seq.request.promptLogprobs ?? 0, this.logprobScratch);
        seq.promptLogprobs.push({
          tokenId: next,
          logprob: lp.logprob,
          rank: lp.rank,
          ...(lp.top.length > 0 ? { top: lp.top } : {}),
        });
      }
      if (seq.numComputed < seq.tokens.length) return;
      const row = (rows[count - 1] as number) * V;
      for (const s of seq.forks !== undefined ? this.fork(seq) : [seq]) this.next(s, logits, row);
    });
  }

  /**
   * The lead's prompt is computed: its sequences replace it, the first with its blocks and slots,
   * the others with copies of them (or, when no blocks are free, to recompute the prompt later).
   */
  private fork(lead: Sequence): Sequence[] {
    const forks = lead.forks as Sequence[];
    lead.forks = undefined;
    let at = this.running.indexOf(lead);
    this.running.splice(at, 1);
    lead.status = "finished";
    // Copies first: the first sequence then takes the lead's own blocks.
    const copied = forks.map((child, i) => i === 0 || this.copyCache(lead, child));
    lead.tables.forEach((table, g) => {
      ((forks[0] as Sequence).tables[g] as number[]).push(...table);
      table.length = 0;
    });
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

  /** Gives `to` blocks and slots holding what `from`'s hold; false when there are not enough free. */
  private copyCache(from: Sequence, to: Sequence): boolean {
    const groups = this.groups;
    if (!from.tables.every((t, g) => (groups[g] as CacheGroup).blocks.canAllocate(t.length))) return false;
    from.tables.forEach((t, g) => {
      (to.tables[g] as number[]).push(...(groups[g] as CacheGroup).blocks.allocate(t.length));
    });
    for (const { cache, group, slots } of this.storage) {
      if (cache !== undefined && group !== undefined) {
        const src = from.tables[group] as number[];
        const dst = to.tables[group] as number[];
        const keys = cache.spec.blockSize * cache.keyStride;
        const values = cache.spec.blockSize * cache.valueStride;
        src.forEach((b, j) => {
          const d = dst[j] as number;
          cache.keys.copyWithin(d * keys, b * keys, (b + 1) * keys);
          cache.values.copyWithin(d * values, b * values, (b + 1) * values);
        });
      }
      if (slots !== undefined) {
        const b = (from.tables[this.slotGroup] as number[])[0] as number;
        const d = (to.tables[this.slotGroup] as number[])[0] as number;
        slots.data.copyWithin(d * slots.floats, b * slots.floats, (b + 1) * slots.floats);
      }
    }
    return true;
  }

  /** Samples `seq`'s next token from the logits at `row`, or ends it at max_tokens. */
  private next(seq: Sequence, logits: Float32Array, row: number): void {
    const V = this.network.vocabSize;
    if (seq.numGenerated >= seq.request.maxTokens) {
      this.finish(seq, "length", undefined);
      return;
    }
    const tokenId = sampleToken(logits, row, V, seq.request.sampling ?? {}, seq.rng, {
      promptTokenIds: seq.request.promptTokenIds,
      outputTokenIds: seq.outputTokenIds,
      ...(seq.numGenerated < (seq.request.minTokens ?? 0) ? { banned: seq.stopIds } : {}),
    });
    const lp = logprobsOf(logits, row, V, tokenId, seq.request.logprobs ?? 0, this.logprobScratch);
    const token: GeneratedToken = {
      tokenId,
      logprob: lp.logprob,
      rank: lp.rank,
      ...(seq.request.logprobs !== undefined ? { top: lp.top } : {}),
    };
    seq.tokens.push(tokenId);
    seq.outputTokenIds.push(tokenId);
    seq.numGenerated++;
    this.generationTokensTotal++;
    if (seq.stopIds.has(tokenId)) this.finish(seq, "stop", token);
    else if (seq.numGenerated >= seq.request.maxTokens || seq.tokens.length >= this.limits.maxModelLen)
      this.finish(seq, "length", token);
    else seq.queue?.push(this.output(seq, token, null));
  }
}

/**
 * The value of each of the model's switches: the option's where given, else the switch's default;
 * ENGINE_OPTIONS_INVALID for a switch the model does not declare or a value it does not allow.
 */
function resolveSwitches(
  model: CausalLM,
  given: Readonly<Record<string, string>>,
): ReadonlyMap<string, string> {
  const values = new Map(model.switches.map((s) => [s.name, s.default]));
  for (const [name, value] of Object.entries(given)) {
    const declared = model.switches.find((s) => s.name === name);
    if (declared === undefined && name === "mxfp4") {
      throw new BringupError(
        "ENGINE_OPTIONS_INVALID",
        "switch mxfp4 chooses how MXFP4 weights are multiplied, and this model holds no MXFP4 weights; drop the switch, or serve a checkpoint with MXFP4 weights.",
        { subject: name },
      );
    }
    if (declared === undefined) {
      const known = model.switches.map((s) => s.name);
      throw new BringupError(
        "ENGINE_OPTIONS_INVALID",
        `this model has no switch "${name}" (${known.length > 0 ? `it has ${known.join(", ")}` : "it has none"}).`,
        { subject: name },
      );
    }
    if (!declared.values.includes(value)) {
      throw new BringupError(
        "ENGINE_OPTIONS_INVALID",
        `switch ${name} must be one of ${declared.values.join(", ")}, got "${value}".`,
        { subject: name },
      );
    }
    values.set(name, value);
  }
  return values;
}
