import { Agent, type Dispatcher, request as httpRequest } from "undici";
import { readTokenStream } from "../client/index.js";
import { BringupError, isBringupError } from "../common/errors.js";
import type { WorkloadRequest } from "./workload.js";

/** Where and how to send requests: an OpenAI-compatible base URL (without /v1). */
export interface Target {
  readonly url: string;
  readonly model: string;
  /** completions sends `prompt` (text or ids); chat sends one user message (text only). */
  readonly endpointType?: "completions" | "chat";
  readonly apiKey?: string;
  /** vLLM's ignore_eos: generate exactly max_tokens. */
  readonly ignoreEos?: boolean;
  /**
   * How the tokens of each chunk are counted: "logprobs" (default) asks for the sampled token's
   * logprob so every chunk lists its tokens, even one whose text the server held back; "chunks"
   * counts each non-empty chunk as one token, as vLLM's bench serve does.
   */
  readonly tokenCounting?: "logprobs" | "chunks";
  /** false sends non-streaming requests: the whole answer is one chunk, timed when its body is read. */
  readonly stream?: boolean;
}

/** Why a request failed, in a few stable words (counted per reason in a run's report). */
export type FailureReason =
  | "http-error"
  | "connection"
  | "stall"
  | "timeout"
  | "malformed-sse"
  | "malformed-json"
  | "error-event"
  | "truncated"
  | "no-tokens";

export interface RequestResult {
  readonly index: number;
  readonly ok: boolean;
  readonly failure?: { readonly reason: FailureReason; readonly message: string };
  /** performance.now() times, ms. Latencies count from `scheduledAt` (no coordinated omission). */
  readonly scheduledAt: number;
  readonly sentAt: number;
  readonly endAt: number;
  /** Arrival time and token count of each content chunk. */
  readonly chunkTimes: readonly number[];
  readonly chunkTokens: readonly number[];
  readonly promptTokens?: number;
  /** completion_tokens from the server's usage, when it sent usage. */
  readonly usageTokens?: number;
  readonly text: string;
}

export interface SendOptions {
  /** Fails the request when no byte arrives for this long (default 30 s). */
  readonly stallTimeoutMs?: number;
  /** Fails the request when it runs longer than this in all (default 10 min). */
  readonly requestTimeoutMs?: number;
  readonly signal?: AbortSignal;
}

let shared: Agent | undefined;

/**
 * One keep-alive connection pool for every request of the process. undici's request API, not
 * fetch: fetch costs several times more CPU per request and per chunk, which a load generator
 * would add to the latencies it reports (see bench/client-overhead.ts).
 */
function agent(): Agent {
  shared ??= new Agent({ keepAliveTimeout: 60_000, connections: null });
  return shared;
}

/** Sends one streaming request and times each chunk; never throws for a failed request, it reports it. */
export async function sendStreaming(
  target: Target,
  request: WorkloadRequest,
  index: number,
  scheduledAt: number,
  options: SendOptions = {},
): Promise<RequestResult> {
  const chat = target.endpointType === "chat";
  const streaming = target.stream !== false;
  if (chat && typeof request.prompt !== "string") {
    throw new BringupError(
      "BENCH_CHAT_NEEDS_TEXT",
      "a chat endpoint takes text prompts; use --endpoint-type completions for token-id workloads.",
    );
  }
  const body = {
    model: target.model,
    ...(chat ? { messages: [{ role: "user", content: request.prompt }] } : { prompt: request.prompt }),
    max_tokens: request.maxTokens,
    ...(chat ? { max_completion_tokens: request.maxTokens } : {}),
    ...(streaming ? { stream: true, stream_options: { include_usage: true } } : {}),
    temperature: 0,
    ...(target.ignoreEos ? { ignore_eos: true } : {}),
    ...(target.tokenCounting === "chunks"
      ? {}
      : chat
        ? { logprobs: true, top_logprobs: 0 }
        : { logprobs: 0 }),
  };
  // Silence is caught by undici's own header and body timeouts, and the total limit at each read:
  // no timer or AbortController per request, which at thousands of requests a second shows.
  const stallMs = options.stallTimeoutMs ?? 30_000;
  const limitMs = options.requestTimeoutMs ?? 600_000;
  let timedOut = false;
  function alive(): void {
    if (performance.now() - sentAt > limitMs) {
      timedOut = true;
      throw new BringupError("BENCH_REQUEST_TIMEOUT", "the request ran past its time limit");
    }
  }
  const chunkTimes: number[] = [];
  const chunkTokens: number[] = [];
  let text = "";
  const sentAt = performance.now();
  const result = (fields: Partial<RequestResult> & { ok: boolean }): RequestResult => ({
    index,
    scheduledAt,
    sentAt,
    endAt: performance.now(),
    chunkTimes,
    chunkTokens,
    text,
    ...fields,
  });
  try {
    const response = await httpRequest(`${target.url}/v1/${chat ? "chat/completions" : "completions"}`, {
      dispatcher: agent(),
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
      },
      body: JSON.stringify(body),
      headersTimeout: streaming ? stallMs : limitMs,
      bodyTimeout: stallMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    alive();
    if (response.statusCode < 200 || response.statusCode > 299) {
      const detail = (await response.body.text().catch(() => "")).slice(0, 200);
      return result({
        ok: false,
        failure: {
          reason: "http-error",
          message: `HTTP ${response.statusCode}${detail ? `: ${detail}` : ""}`,
        },
      });
    }
    if (!streaming) return result(await readWhole(response, chunkTimes, chunkTokens, (t) => (text = t)));
    const stream = await readTokenStream(response.body, {
      onRead: alive,
      onChunk: (chunk) => {
        chunkTimes.push(chunk.receivedAt);
        chunkTokens.push(chunk.tokens);
        text += chunk.text;
      },
    });
    if (chunkTimes.length === 0) {
      return result({ ok: false, failure: { reason: "no-tokens", message: "the stream carried no tokens" } });
    }
    return result({
      ok: true,
      ...(stream.usage
        ? { promptTokens: stream.usage.promptTokens, usageTokens: stream.usage.completionTokens }
        : {}),
    });
  } catch (error) {
    return result({ ok: false, failure: classify(error, timedOut, stallMs) });
  }
}

/** Reads a non-streaming answer as one chunk holding all its tokens. */
async function readWhole(
  response: Dispatcher.ResponseData,
  chunkTimes: number[],
  chunkTokens: number[],
  setText: (text: string) => void,
): Promise<Partial<RequestResult> & { ok: boolean }> {
  const raw = await response.body.text();
  const at = performance.now();
  let body: {
    choices?: { text?: unknown; message?: { content?: unknown } }[];
    usage?: Record<string, unknown>;
  };
  try {
    body = JSON.parse(raw);
  } catch {
    return {
      ok: false,
      failure: { reason: "malformed-json", message: `the answer is not JSON: ${raw.slice(0, 80)}` },
    };
  }
  const choice = body.choices?.[0];
  const text = typeof choice?.text === "string" ? choice.text : choice?.message?.content;
  const completion = body.usage?.completion_tokens;
  const prompt = body.usage?.prompt_tokens;
  if (typeof text !== "string" || typeof completion !== "number") {
    return { ok: false, failure: { reason: "no-tokens", message: "the answer has no text or no usage" } };
  }
  setText(text);
  chunkTimes.push(at);
  chunkTokens.push(completion);
  return {
    ok: true,
    usageTokens: completion,
    ...(typeof prompt === "number" ? { promptTokens: prompt } : {}),
  };
}

function classify(error: unknown, timedOut: boolean, stallMs: number): NonNullable<RequestResult["failure"]> {
  const code = (error as { code?: unknown }).code;
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") {
    return { reason: "stall", message: `no data for ${stallMs} ms` };
  }
  if (timedOut) return { reason: "timeout", message: "the request ran past its time limit" };
  if (isBringupError(error)) {
    if (error.code === "SSE_MALFORMED") return { reason: "malformed-sse", message: error.message };
    if (error.code === "SSE_ERROR_EVENT") return { reason: "error-event", message: error.message };
    if (error.code === "SSE_TRUNCATED") return { reason: "truncated", message: error.message };
  }
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const message = [(error as Error).message, cause?.code ?? cause?.message].filter(Boolean).join(": ");
  return { reason: "connection", message: message || String(error) };
}
