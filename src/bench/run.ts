import { setMaxListeners } from "node:events";
import { BringupError } from "../common/errors.js";
import { runLoad } from "./load.js";
import { computeMetrics, type RunMetrics, type Slos } from "./metrics.js";
import { type RequestResult, type SendOptions, sendStreaming, type Target } from "./request.js";
import type { Workload } from "./workload.js";

export interface RunOptions extends Omit<SendOptions, "signal" | "connections"> {
  readonly target: Target;
  readonly workload: Workload;
  /** Requests per second; Infinity (default) sends all at once, limited by maxConcurrency. */
  readonly requestRate?: number;
  readonly burstiness?: number;
  readonly maxConcurrency?: number;
  /** Requests run first and left out of every figure (vLLM's --num-warmups). */
  readonly numWarmups?: number;
  readonly seed?: number;
  readonly percentiles?: readonly number[];
  readonly slos?: Slos;
  /** Count each completed request's text with the endpoint's /tokenize to cross-check usage (default true). */
  readonly checkTokenizer?: boolean;
  readonly signal?: AbortSignal;
  /** Sees each measured request as it ends (for a progress bar). */
  readonly onRequest?: (result: RequestResult) => void;
}

export interface RunResult {
  readonly requests: readonly RequestResult[];
  readonly metrics: RunMetrics;
  /** Why the tokenizer cross-check did not run, when it did not. */
  readonly tokenizerSkipped?: string;
}

export const DEFAULT_PERCENTILES = [99] as const;

/** One measured run: warmups, then the workload under the load shape, then the figures. */
export async function runBench(options: RunOptions): Promise<RunResult> {
  const requests = options.workload.requests;
  // Each request in flight listens on the caller's signal; hundreds at once is the point, not a leak.
  if (options.signal) setMaxListeners(0, options.signal);
  const send: SendOptions = {
    ...(options.stallTimeoutMs !== undefined ? { stallTimeoutMs: options.stallTimeoutMs } : {}),
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.maxConcurrency !== undefined ? { connections: options.maxConcurrency } : {}),
  };
  const warmups = options.numWarmups ?? 0;
  if (!Number.isInteger(warmups) || warmups < 0) {
    throw new BringupError("BENCH_WARMUPS_INVALID", `--num-warmups must be a whole number, got ${warmups}.`);
  }
  for (let i = 0; i < warmups; i++) {
    const request = requests[i % requests.length];
    if (request) await sendStreaming(options.target, request, -1 - i, performance.now(), send);
  }
  const results = await runLoad(
    requests.length,
    {
      requestRate: options.requestRate ?? Number.POSITIVE_INFINITY,
      burstiness: options.burstiness ?? 1,
      ...(options.maxConcurrency !== undefined ? { maxConcurrency: options.maxConcurrency } : {}),
      seed: options.seed ?? 0,
    },
    (index, scheduledAt) => {
      const request = requests[index];
      if (!request) throw new BringupError("BENCH_INTERNAL", `no request ${index}`);
      return sendStreaming(options.target, request, index, scheduledAt, send);
    },
    {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onRequest ? { onResult: options.onRequest } : {}),
    },
  );
  results.sort((a, b) => a.index - b.index);
  let tokenizerCounts: Map<number, number> | undefined;
  let tokenizerSkipped: string | undefined;
  if (options.checkTokenizer !== false) {
    try {
      tokenizerCounts = await countWithTokenizer(options.target, results);
    } catch (error) {
      tokenizerSkipped = (error as Error).message;
    }
  }
  const metrics = computeMetrics(results, {
    percentiles: options.percentiles ?? DEFAULT_PERCENTILES,
    ...(options.slos ? { slos: options.slos } : {}),
    ...(tokenizerCounts ? { tokenizerCounts } : {}),
  });
  return { requests: results, metrics, ...(tokenizerSkipped ? { tokenizerSkipped } : {}) };
}

/** Output tokens of each completed request as the endpoint's tokenizer counts its text (vLLM's /tokenize). */
async function countWithTokenizer(
  target: Target,
  results: readonly RequestResult[],
): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const result of results) {
    if (!result.ok) continue;
    const response = await fetch(`${target.url}/tokenize`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: target.model, prompt: result.text, add_special_tokens: false }),
    });
    if (!response.ok) throw new Error(`the endpoint's /tokenize answered HTTP ${response.status}`);
    const body = (await response.json()) as { count?: unknown };
    if (typeof body.count !== "number") throw new Error("the endpoint's /tokenize gave no count");
    counts.set(result.index, body.count);
  }
  return counts;
}
