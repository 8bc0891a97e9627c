import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { EngineStats, FinishReason } from "../engine/index.js";

/**
 * The server's Prometheus metrics, one registry per server. Naming rule: a figure vLLM also
 * exports keeps vLLM's exact name (`vllm:` prefix), so one scraper reads this server and a real
 * vLLM alike; a figure vLLM does not export has a `bringup:` prefix. Every series carries vLLM's
 * `model_name` and `engine` labels (one engine: "0"), as vllm/v1/metrics/loggers.py has them.
 */
export const METRIC_NAMES = {
  running: "vllm:num_requests_running",
  waiting: "vllm:num_requests_waiting",
  kvUsage: "vllm:kv_cache_usage_perc",
  preemptions: "vllm:num_preemptions_total",
  promptTokens: "vllm:prompt_tokens_total",
  generationTokens: "vllm:generation_tokens_total",
  requestSuccess: "vllm:request_success_total",
  ttft: "vllm:time_to_first_token_seconds",
  interToken: "vllm:inter_token_latency_seconds",
  e2e: "vllm:e2e_request_latency_seconds",
  queueTime: "vllm:request_queue_time_seconds",
  requestPromptTokens: "vllm:request_prompt_tokens",
  requestGenerationTokens: "vllm:request_generation_tokens",
  prefillTime: "vllm:request_prefill_time_seconds",
  decodeTime: "vllm:request_decode_time_seconds",
  inferenceTime: "vllm:request_inference_time_seconds",
  timePerOutputToken: "vllm:request_time_per_output_token_seconds",
  paramsN: "vllm:request_params_n",
  paramsMaxTokens: "vllm:request_params_max_tokens",
  iterationTokens: "vllm:iteration_tokens_total",
  specDrafts: "vllm:spec_decode_num_drafts_total",
  specDraftTokens: "vllm:spec_decode_num_draft_tokens_total",
  specAcceptedTokens: "vllm:spec_decode_num_accepted_tokens_total",
  specAcceptedPerPosition: "vllm:spec_decode_num_accepted_tokens_per_pos_total",
  kvBlocksUsed: "bringup:kv_cache_blocks_used",
  kvBlocksTotal: "bringup:kv_cache_blocks_total",
  kvTokenCapacity: "bringup:kv_cache_token_capacity",
  stateSlotsUsed: "bringup:state_slots_used",
  stateSlotsTotal: "bringup:state_slots_total",
} as const;

const LATENCY_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];
/** vLLM's 1-2-5 token-count buckets, up to a million tokens. */
const TOKEN_COUNT_BUCKETS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000,
];
const TOKEN_GAP_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5,
];

/** vLLM's tokens-per-step buckets (vllm/v1/metrics/loggers.py, histogram_iteration_tokens). */
const ITERATION_TOKEN_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];

/** vLLM's labels on every series: the served model's name and the engine's index. */
const LABELS = ["model_name", "engine"] as const;
type Label = (typeof LABELS)[number];

/** vLLM's `n` buckets (1, 2, 5, 10, 20). */
const N_BUCKETS = [1, 2, 5, 10, 20];

/** What is known of a request when it finishes. */
export interface FinishedRequest {
  readonly e2eSeconds: number;
  readonly promptTokens: number;
  readonly generationTokens: number;
  /** From the scheduler's first admission to the first token (absent without a token). */
  readonly prefillSeconds?: number;
  /** From the first token to the last. */
  readonly decodeSeconds?: number;
}

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly labels: Record<Label, string>;
  private readonly ttft: Histogram<Label>;
  private readonly interToken: Histogram<Label>;
  private readonly e2e: Histogram<Label>;
  private readonly queueTime: Histogram<Label>;
  private readonly promptTokens: Histogram<Label>;
  private readonly generationTokens: Histogram<Label>;
  private readonly prefillTime: Histogram<Label>;
  private readonly decodeTime: Histogram<Label>;
  private readonly inferenceTime: Histogram<Label>;
  private readonly timePerOutputToken: Histogram<Label>;
  private readonly paramsN: Histogram<Label>;
  private readonly paramsMaxTokens: Histogram<Label>;
  private readonly iterationTokens: Histogram<Label>;
  private readonly finished: Counter<Label | "finished_reason">;
  private readonly generationTokensTotal: Counter<Label>;

  constructor(modelName: string, stats: () => EngineStats) {
    const labels = { model_name: modelName, engine: "0" };
    this.labels = labels;
    const registers = [this.registry];
    const labelNames = LABELS;
    // Gauges and engine-side counters read the engine when scraped, so they are never stale.
    const gauge = (name: string, help: string, value: (s: EngineStats) => number) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.set(labels, value(stats()));
        },
      });
    const counter = (name: string, help: string, value: (s: EngineStats) => number) =>
      new Counter({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.reset();
          this.inc(labels, value(stats()));
        },
      });
    gauge(METRIC_NAMES.running, "Requests running in the engine's batch.", (s) => s.running);
    gauge(
      METRIC_NAMES.waiting,
      "Requests waiting for a place in the batch or for KV blocks.",
      (s) => s.waiting,
    );
    gauge(METRIC_NAMES.kvUsage, "Fraction of the KV cache's bytes in use (1 = full).", (s) => s.kvCacheUsage);
    gauge(
      METRIC_NAMES.kvBlocksUsed,
      "KV cache blocks held by requests, summed over cache groups.",
      (s) => s.kvBlocksUsed,
    );
    gauge(
      METRIC_NAMES.kvBlocksTotal,
      "KV cache blocks in the cache, summed over cache groups.",
      (s) => s.kvBlocksTotal,
    );
    gauge(
      METRIC_NAMES.stateSlotsUsed,
      "Per-sequence state slots (recurrent states, convolution tails) held by requests.",
      (s) => s.stateSlotsUsed,
    );
    gauge(
      METRIC_NAMES.stateSlotsTotal,
      "Per-sequence state slots planned in the KV budget (0 when no layer keeps a state).",
      (s) => s.stateSlotsTotal,
    );
    gauge(
      METRIC_NAMES.kvTokenCapacity,
      "Tokens of context the KV cache holds across requests at max_model_len.",
      (s) => s.kvTokenCapacity,
    );
    counter(
      METRIC_NAMES.preemptions,
      "Requests preempted to free KV blocks (recomputed later).",
      (s) => s.preemptions,
    );
    const spec = stats().specDecode;
    if (spec !== undefined) {
      // vLLM's SpecDecodingProm (vllm/v1/spec_decode/metrics.py), registered only when drafting.
      counter(
        METRIC_NAMES.specDrafts,
        "Sequence-steps that verified drafted tokens.",
        (s) => s.specDecode?.numDrafts ?? 0,
      );
      counter(
        METRIC_NAMES.specDraftTokens,
        "Drafted tokens verified.",
        (s) => s.specDecode?.numDraftTokens ?? 0,
      );
      counter(
        METRIC_NAMES.specAcceptedTokens,
        "Drafted tokens accepted.",
        (s) => s.specDecode?.numAcceptedTokens ?? 0,
      );
      new Counter({
        name: METRIC_NAMES.specAcceptedPerPosition,
        help: "Drafted tokens accepted, by their position in the draft (0 first).",
        labelNames: [...LABELS, "position"],
        registers,
        collect() {
          this.reset();
          const per = stats().specDecode?.acceptedPerPosition ?? [];
          per.forEach((n, position) => {
            this.inc({ ...labels, position: String(position) }, n);
          });
        },
      });
    }
    counter(
      METRIC_NAMES.promptTokens,
      "Prompt tokens run through the model (recomputation included).",
      (s) => s.promptTokensTotal,
    );
    this.generationTokensTotal = new Counter({
      name: METRIC_NAMES.generationTokens,
      help: "Tokens generated, as the answers' usage counts them (none past a matched stop string).",
      labelNames,
      registers,
    });
    this.generationTokensTotal.inc(labels, 0);
    this.finished = new Counter({
      name: METRIC_NAMES.requestSuccess,
      help: "Requests finished, by finish reason (stop, length, abort).",
      labelNames: [...LABELS, "finished_reason"],
      registers,
    });
    const histogram = (name: string, help: string, buckets: number[]) =>
      new Histogram({ name, help, labelNames, registers, buckets });
    this.ttft = histogram(
      METRIC_NAMES.ttft,
      "Seconds from a request's arrival to its first generated token.",
      LATENCY_BUCKETS,
    );
    this.interToken = histogram(
      METRIC_NAMES.interToken,
      "Seconds between consecutive generated tokens of a request.",
      TOKEN_GAP_BUCKETS,
    );
    this.e2e = histogram(METRIC_NAMES.e2e, "Seconds from a request's arrival to its end.", LATENCY_BUCKETS);
    this.queueTime = histogram(
      METRIC_NAMES.queueTime,
      "Seconds a request waited in the engine before the scheduler first admitted it.",
      LATENCY_BUCKETS,
    );
    this.promptTokens = histogram(
      METRIC_NAMES.requestPromptTokens,
      "Prompt tokens of each finished request.",
      TOKEN_COUNT_BUCKETS,
    );
    this.generationTokens = histogram(
      METRIC_NAMES.requestGenerationTokens,
      "Generated tokens of each finished request.",
      TOKEN_COUNT_BUCKETS,
    );
    this.prefillTime = histogram(
      METRIC_NAMES.prefillTime,
      "Seconds from a request's first admission by the scheduler to its first token.",
      LATENCY_BUCKETS,
    );
    this.decodeTime = histogram(
      METRIC_NAMES.decodeTime,
      "Seconds from a request's first token to its last.",
      LATENCY_BUCKETS,
    );
    this.inferenceTime = histogram(
      METRIC_NAMES.inferenceTime,
      "Seconds from a request's first admission by the scheduler to its last token (prefill + decode).",
      LATENCY_BUCKETS,
    );
    this.timePerOutputToken = histogram(
      METRIC_NAMES.timePerOutputToken,
      "Each finished request's decode seconds per generated token after the first.",
      TOKEN_GAP_BUCKETS,
    );
    this.paramsN = histogram(
      METRIC_NAMES.paramsN,
      "The sequences each request asked for (n, or best_of).",
      N_BUCKETS,
    );
    this.paramsMaxTokens = histogram(
      METRIC_NAMES.paramsMaxTokens,
      "The max_tokens of each request.",
      TOKEN_COUNT_BUCKETS,
    );
    this.iterationTokens = histogram(
      METRIC_NAMES.iterationTokens,
      "Tokens of each engine step: those generated, plus the prompt of each sequence given its first token.",
      ITERATION_TOKEN_BUCKETS,
    );
    // process_cpu_seconds_total, process_resident_memory_bytes, nodejs_eventloop_lag_seconds, …
    collectDefaultMetrics({ register: this.registry });
  }

  queued(seconds: number): void {
    this.queueTime.observe(this.labels, seconds);
  }

  firstToken(seconds: number): void {
    this.ttft.observe(this.labels, seconds);
  }

  generated(tokens: number): void {
    if (tokens > 0) this.generationTokensTotal.inc(this.labels, tokens);
  }

  nextToken(seconds: number): void {
    this.interToken.observe(this.labels, seconds);
  }

  /** One engine step's tokens (Engine.onStep). */
  iteration(tokens: number): void {
    this.iterationTokens.observe(this.labels, tokens);
  }

  /** A request admitted to the engine: its sequences (n, or best_of) and its max_tokens. */
  requestParams(n: number, maxTokens: number): void {
    this.paramsN.observe(this.labels, n);
    this.paramsMaxTokens.observe(this.labels, maxTokens);
  }

  finish(reason: FinishReason, request: FinishedRequest): void {
    this.finished.inc({ ...this.labels, finished_reason: reason });
    this.e2e.observe(this.labels, request.e2eSeconds);
    this.promptTokens.observe(this.labels, request.promptTokens);
    this.generationTokens.observe(this.labels, request.generationTokens);
    const { prefillSeconds, decodeSeconds } = request;
    if (prefillSeconds === undefined || decodeSeconds === undefined) return;
    this.prefillTime.observe(this.labels, prefillSeconds);
    this.decodeTime.observe(this.labels, decodeSeconds);
    this.inferenceTime.observe(this.labels, prefillSeconds + decodeSeconds);
    if (request.generationTokens > 1)
      this.timePerOutputToken.observe(this.labels, decodeSeconds / (request.generationTokens - 1));
  }

  /** The Prometheus text exposition and its content type. */
  async render(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
