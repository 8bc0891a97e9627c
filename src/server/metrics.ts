import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { EngineStats, FinishReason } from "../engine/index.js";

/**
 * The server's Prometheus metrics, one registry per server. Naming rule: a figure vLLM also
 * exports keeps vLLM's exact name (`vllm:` prefix), so one scraper reads this server and a real
 * vLLM alike; a figure vLLM does not export has a `bringup:` prefix. Every series carries vLLM's
 * `model_name` label.
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

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly labels: { model_name: string };
  private readonly ttft: Histogram<"model_name">;
  private readonly interToken: Histogram<"model_name">;
  private readonly e2e: Histogram<"model_name">;
  private readonly queueTime: Histogram<"model_name">;
  private readonly promptTokens: Histogram<"model_name">;
  private readonly generationTokens: Histogram<"model_name">;
  private readonly finished: Counter<"model_name" | "finished_reason">;
  private readonly generationTokensTotal: Counter<"model_name">;

  constructor(modelName: string, stats: () => EngineStats) {
    const labels = { model_name: modelName };
    this.labels = labels;
    const registers = [this.registry];
    const labelNames = ["model_name"] as const;
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
    this.finished = new Counter({
      name: METRIC_NAMES.requestSuccess,
      help: "Requests finished, by finish reason (stop, length, abort).",
      labelNames: ["model_name", "finished_reason"],
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

  finish(reason: FinishReason, seconds: number, promptTokens: number, generationTokens: number): void {
    this.finished.inc({ ...this.labels, finished_reason: reason });
    this.e2e.observe(this.labels, seconds);
    this.promptTokens.observe(this.labels, promptTokens);
    this.generationTokens.observe(this.labels, generationTokens);
  }

  /** The Prometheus text exposition and its content type. */
  async render(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
