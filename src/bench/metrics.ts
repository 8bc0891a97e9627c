import { BringupError } from "../common/errors.js";
import type { FailureReason, RequestResult } from "./request.js";
import { type Summary, summarize } from "./stats.js";

/** Per-request latency metrics that can be summarized with percentiles (vLLM's names). */
export const PERCENTILE_METRICS = ["ttft", "tpot", "itl", "e2el"] as const;
export type PercentileMetric = (typeof PERCENTILE_METRICS)[number];

/** Service-level objectives in ms (vLLM's --goodput ttft:ms tpot:ms e2el:ms). */
export type Slos = Partial<Record<"ttft" | "tpot" | "e2el", number>>;

export interface RunMetrics {
  readonly completed: number;
  readonly failed: number;
  readonly failures: Partial<Record<FailureReason, number>>;
  readonly durationS: number;
  readonly totalInputTokens: number;
  readonly totalOutputTokens: number;
  readonly requestThroughput: number;
  /** Aggregate output tokens per second over the run. */
  readonly outputThroughput: number;
  readonly totalTokenThroughput: number;
  /** Prompt tokens per second of time to first token, over all completed requests. */
  readonly prefillThroughput: number;
  /** Requests per second that met every SLO; absent without SLOs. */
  readonly goodput?: number;
  /** ms, except decode (tok/s of each stream after its first token). */
  readonly ttft: Summary;
  readonly tpot: Summary;
  readonly itl: Summary;
  readonly e2el: Summary;
  readonly decode: Summary;
  /** Output tokens counted three ways: the server's usage, the stream's chunks, the endpoint's tokenizer. */
  readonly tokenCheck: TokenCheck;
}

export interface TokenCheck {
  /** Completed requests whose usage disagreed with the tokens counted in the stream. */
  readonly streamMismatches: number;
  /** Completed requests whose usage disagreed with the tokenizer's count of their text; undefined when not checked. */
  readonly tokenizerMismatches?: number;
  /** Sum of |usage - tokenizer| over the checked requests. */
  readonly tokenizerAbsDifference?: number;
  /** Completed requests without usage (their output count fell back to the stream's chunks). */
  readonly withoutUsage: number;
}

/** Output tokens of a completed request: the server's usage, else what the stream carried. */
export function outputTokens(result: RequestResult): number {
  return result.usageTokens ?? result.chunkTokens.reduce((sum, n) => sum + n, 0);
}

/** Inter-token latencies of one request: a chunk of k tokens after a gap g counts as k gaps of g/k. */
export function interTokenLatencies(result: RequestResult): number[] {
  const gaps: number[] = [];
  for (let i = 1; i < result.chunkTimes.length; i++) {
    const gap = (result.chunkTimes[i] ?? 0) - (result.chunkTimes[i - 1] ?? 0);
    const tokens = result.chunkTokens[i] ?? 1;
    for (let t = 0; t < tokens; t++) gaps.push(gap / tokens);
  }
  return gaps;
}

export interface RequestLatency {
  readonly ttft: number;
  readonly e2el: number;
  /** Undefined for a single output token. */
  readonly tpot?: number;
  readonly decodeTokS?: number;
}

export function requestLatency(result: RequestResult): RequestLatency {
  const first = result.chunkTimes[0] ?? result.endAt;
  const ttft = first - result.scheduledAt;
  const e2el = result.endAt - result.scheduledAt;
  const out = outputTokens(result);
  // The first chunk may carry several tokens; only those after the first token are decode.
  const decodeTime = (result.chunkTimes.at(-1) ?? first) - first;
  if (out <= 1 || decodeTime <= 0) return { ttft, e2el };
  return { ttft, e2el, tpot: (e2el - ttft) / (out - 1), decodeTokS: ((out - 1) * 1000) / decodeTime };
}

/** Whether a completed request met every SLO given. */
export function meetsSlos(latency: RequestLatency, slos: Slos): boolean {
  if (slos.ttft !== undefined && latency.ttft > slos.ttft) return false;
  if (slos.e2el !== undefined && latency.e2el > slos.e2el) return false;
  if (slos.tpot !== undefined && (latency.tpot ?? 0) > slos.tpot) return false;
  return true;
}

export function computeMetrics(
  results: readonly RequestResult[],
  options: { percentiles: readonly number[]; slos?: Slos; tokenizerCounts?: ReadonlyMap<number, number> },
): RunMetrics {
  if (results.length === 0) {
    throw new BringupError("BENCH_NO_REQUESTS", "the run measured no requests; raise --num-prompts.");
  }
  const done = results.filter((r) => r.ok);
  const failures: Partial<Record<FailureReason, number>> = {};
  for (const r of results) {
    if (r.failure) failures[r.failure.reason] = (failures[r.failure.reason] ?? 0) + 1;
  }
  const start = Math.min(...results.map((r) => r.scheduledAt));
  const end = Math.max(...results.map((r) => r.endAt));
  const durationS = Math.max(end - start, 1e-9) / 1000;
  const latencies = done.map(requestLatency);
  const totalInput = done.reduce((sum, r) => sum + (r.promptTokens ?? 0), 0);
  const totalOutput = done.reduce((sum, r) => sum + outputTokens(r), 0);
  const ttftTotalS = latencies.reduce((sum, l) => sum + l.ttft, 0) / 1000;
  const p = options.percentiles;
  let tokenizerMismatches: number | undefined;
  let tokenizerAbsDifference: number | undefined;
  if (options.tokenizerCounts) {
    tokenizerMismatches = 0;
    tokenizerAbsDifference = 0;
    for (const r of done) {
      const counted = options.tokenizerCounts.get(r.index);
      if (counted === undefined || r.usageTokens === undefined) continue;
      if (counted !== r.usageTokens) tokenizerMismatches++;
      tokenizerAbsDifference += Math.abs(counted - r.usageTokens);
    }
  }
  const streamCount = (r: RequestResult) => r.chunkTokens.reduce((sum, n) => sum + n, 0);
  return {
    completed: done.length,
    failed: results.length - done.length,
    failures,
    durationS,
    totalInputTokens: totalInput,
    totalOutputTokens: totalOutput,
    requestThroughput: done.length / durationS,
    outputThroughput: totalOutput / durationS,
    totalTokenThroughput: (totalInput + totalOutput) / durationS,
    prefillThroughput: ttftTotalS > 0 ? totalInput / ttftTotalS : 0,
    ...(options.slos && Object.keys(options.slos).length > 0
      ? { goodput: latencies.filter((l) => meetsSlos(l, options.slos ?? {})).length / durationS }
      : {}),
    ttft: summarize(
      latencies.map((l) => l.ttft),
      p,
    ),
    tpot: summarize(
      latencies.flatMap((l) => (l.tpot === undefined ? [] : [l.tpot])),
      p,
    ),
    itl: summarize(done.flatMap(interTokenLatencies), p),
    e2el: summarize(
      latencies.map((l) => l.e2el),
      p,
    ),
    decode: summarize(
      latencies.flatMap((l) => (l.decodeTokS === undefined ? [] : [l.decodeTokS])),
      p,
    ),
    tokenCheck: {
      streamMismatches: done.filter((r) => r.usageTokens !== undefined && r.usageTokens !== streamCount(r))
        .length,
      withoutUsage: done.filter((r) => r.usageTokens === undefined).length,
      ...(tokenizerMismatches !== undefined ? { tokenizerMismatches, tokenizerAbsDifference } : {}),
    },
  };
}
