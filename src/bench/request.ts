import { Agent, type Dispatcher } from "undici";
import { type TokenStream, TokenStreamReader } from "../client/index.js";
import { BringupError, isBringupError } from "../common/errors.js";
import { type Deferred, SliceQueue } from "./slices.js";
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
  /**
   * Most connections kept open to one endpoint (default: one per request in flight). runBench
   * passes its max concurrency, so a closed loop reuses its connections instead of opening new ones
   * while a finished request's connection is being handed back.
   */
  readonly connections?: number;
}

const agents = new Map<number, Agent>();

/**
 * Keep-alive connection pools shared by every request of the process, one per connection limit
 * (0: no limit). Requests go through undici's dispatch API with a handler of our own, not
 * request() or fetch: no URL parsing, response stream or promise per request or chunk, and each
 * read is stamped in the callback that delivers it (bench/client-overhead.ts measures the cost).
 */
function agent(connections: number | undefined): Agent {
  const limit = connections ?? 0;
  let found = agents.get(limit);
  if (found === undefined) {
    found = new Agent({ keepAliveTimeout: 60_000, connections: limit === 0 ? null : limit });
    agents.set(limit, found);
  }
  return found;
}

/**
 * Closes every pooled connection. After a server restarts on the same address its old keep-alive
 * connections lead nowhere useful (or to the old server's lingering sockets): the next request
 * must open a new one.
 */
export async function dropConnections(): Promise<void> {
  const pools = [...agents.values()];
  agents.clear();
  await Promise.all(pools.map((pool) => pool.destroy()));
}

/** Origin and path prefix of each base URL seen, parsed once rather than per request. */
const bases = new Map<string, { origin: string; prefix: string }>();

function base(url: string): { origin: string; prefix: string } {
  let found = bases.get(url);
  if (found === undefined) {
    const parsed = new URL(url);
    found = { origin: parsed.origin, prefix: parsed.pathname.replace(/\/+$/, "") };
    bases.set(url, found);
  }
  return found;
}

/** Sends one streaming request and times each chunk; never throws for a failed request, it reports it. */
export function sendStreaming(
  target: Target,
  request: WorkloadRequest,
  index: number,
  scheduledAt: number,
  options: SendOptions = {},
): Promise<RequestResult> {
  const chat = target.endpointType === "chat";
  const streaming = target.stream !== false;
  if (chat && typeof request.prompt !== "string") {
    return Promise.reject(
      new BringupError(
        "BENCH_CHAT_NEEDS_TEXT",
        "a chat endpoint takes text prompts; use --endpoint-type completions for token-id workloads.",
      ),
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
  return new Promise((resolve) => {
    const exchange = new Exchange(index, scheduledAt, streaming, options, resolve);
    let where: { origin: string; prefix: string };
    try {
      where = base(target.url);
    } catch (error) {
      exchange.onResponseError(undefined, error as Error);
      return;
    }
    // Silence is caught by undici's own header and body timeouts, and the total limit at each read:
    // no timer or AbortController per request, which at thousands of requests a second shows.
    const options_: Dispatcher.DispatchOptions = {
      origin: where.origin,
      path: `${where.prefix}/v1/${chat ? "chat/completions" : "completions"}`,
      method: "POST",
      headers: target.apiKey
        ? { "content-type": "application/json", authorization: `Bearer ${target.apiKey}` }
        : { "content-type": "application/json" },
      body: JSON.stringify(body),
      headersTimeout: streaming ? exchange.stallMs : exchange.limitMs,
      bodyTimeout: exchange.stallMs,
    };
    try {
      agent(options.connections).dispatch(options_, exchange);
    } catch (error) {
      exchange.onResponseError(undefined, error as Error);
    }
  });
}

/**
 * Where each request's reads are parsed: out of undici's callbacks, a quarter millisecond at a
 * time, so the stamp of a read never waits behind the parsing of hundreds of others.
 */
const parsing = new SliceQueue(0.25, 4);

/**
 * One request's handler. undici's callbacks only stamp and keep what arrived; the parsing, the
 * verdict and the promise's settling run later in `run` (from the slice queue), once per batch.
 */
class Exchange implements Dispatcher.DispatchHandler, Deferred {
  readonly stallMs: number;
  readonly limitMs: number;
  private readonly sentAt = performance.now();
  private readonly chunkTimes: number[] = [];
  private readonly chunkTokens: number[] = [];
  private text = "";
  private status = 0;
  /** Reads not yet parsed, with the time each arrived. */
  private readonly reads: Buffer[] = [];
  private readonly readTimes: number[] = [];
  /** The body of a non-streaming or failed answer. */
  private readonly parts: Buffer[] = [];
  private reader: TokenStreamReader | undefined;
  /** When the response ended or failed, as undici told us. */
  private endedAt: number | undefined;
  private error: Error | undefined;
  private queued = false;
  private timedOut = false;
  private settled = false;
  private controller: Dispatcher.DispatchController | undefined;
  private abortReason: unknown;
  private readonly signal: AbortSignal | undefined;

  constructor(
    private readonly index: number,
    private readonly scheduledAt: number,
    private readonly streaming: boolean,
    options: SendOptions,
    private readonly resolve: (result: RequestResult) => void,
  ) {
    this.stallMs = options.stallTimeoutMs ?? 30_000;
    this.limitMs = options.requestTimeoutMs ?? 600_000;
    this.signal = options.signal;
    if (this.signal) {
      if (this.signal.aborted) this.abortReason = this.signal.reason;
      else this.signal.addEventListener("abort", this.onAbort, { once: true });
    }
  }

  private readonly onAbort = (): void => {
    this.abortReason = this.signal?.reason;
    this.controller?.abort(this.abortReason as Error);
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason !== undefined) controller.abort(this.abortReason as Error);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    this.status = statusCode;
    this.alive(controller, performance.now());
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const at = performance.now();
    if (!this.alive(controller, at)) return;
    this.reads.push(chunk);
    this.readTimes.push(at);
    this.defer();
  }

  onResponseEnd(): void {
    this.endedAt = performance.now();
    this.defer();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.endedAt ??= performance.now();
    this.error ??= error;
    this.defer();
  }

  /** Parses what arrived since the last run; settles the request once it ended or failed. */
  run(): boolean {
    this.queued = false;
    if (this.settled) return false;
    const ok = this.status >= 200 && this.status <= 299;
    try {
      for (let i = 0; i < this.reads.length; i++) {
        const bytes = this.reads[i] as Buffer;
        if (!this.streaming || !ok) {
          this.parts.push(bytes);
          continue;
        }
        this.reader ??= new TokenStreamReader((c) => {
          this.chunkTimes.push(c.receivedAt);
          this.chunkTokens.push(c.tokens);
          this.text += c.text;
        });
        this.reader.push(bytes, this.readTimes[i] as number);
      }
    } catch (error) {
      this.endedAt ??= performance.now();
      this.fail(error as Error);
      this.controller?.abort(error as Error);
      return true;
    } finally {
      this.reads.length = 0;
      this.readTimes.length = 0;
    }
    if (this.error) this.fail(this.error);
    else if (this.endedAt !== undefined) this.complete(ok);
    return this.settled;
  }

  private defer(): void {
    if (this.queued || this.settled) return;
    this.queued = true;
    parsing.defer(this);
  }

  private complete(ok: boolean): void {
    if (!ok) {
      const detail = joined(this.parts).slice(0, 200);
      this.finish({
        ok: false,
        failure: { reason: "http-error", message: `HTTP ${this.status}${detail ? `: ${detail}` : ""}` },
      });
      return;
    }
    if (!this.streaming) {
      this.finish(this.whole(joined(this.parts), this.endedAt ?? performance.now()));
      return;
    }
    let stream: TokenStream;
    try {
      stream = (this.reader ?? new TokenStreamReader()).end();
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    if (this.chunkTimes.length === 0) {
      this.finish({ ok: false, failure: { reason: "no-tokens", message: "the stream carried no tokens" } });
      return;
    }
    this.finish({
      ok: true,
      ...(stream.usage
        ? { promptTokens: stream.usage.promptTokens, usageTokens: stream.usage.completionTokens }
        : {}),
    });
  }

  private fail(error: Error): void {
    this.finish({ ok: false, failure: classify(error, this.timedOut, this.stallMs) });
  }

  /** Fails the request once it has run past its total limit; whether it may go on. */
  private alive(controller: Dispatcher.DispatchController, at: number): boolean {
    if (at - this.sentAt <= this.limitMs) return true;
    this.timedOut = true;
    controller.abort(new BringupError("BENCH_REQUEST_TIMEOUT", "the request ran past its time limit"));
    return false;
  }

  /** Reads a non-streaming answer as one chunk holding all its tokens, timed when the body ended. */
  private whole(raw: string, at: number): Partial<RequestResult> & { ok: boolean } {
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
    this.text = text;
    this.chunkTimes.push(at);
    this.chunkTokens.push(completion);
    return {
      ok: true,
      usageTokens: completion,
      ...(typeof prompt === "number" ? { promptTokens: prompt } : {}),
    };
  }

  private finish(fields: Partial<RequestResult> & { ok: boolean }): void {
    if (this.settled) return;
    this.settled = true;
    this.signal?.removeEventListener("abort", this.onAbort);
    this.resolve({
      index: this.index,
      scheduledAt: this.scheduledAt,
      sentAt: this.sentAt,
      endAt: this.endedAt ?? performance.now(),
      chunkTimes: this.chunkTimes,
      chunkTokens: this.chunkTokens,
      text: this.text,
      ...fields,
    });
  }
}

/** The text of a body's reads (nearly always one: no copy then). */
function joined(parts: readonly Buffer[]): string {
  return (parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)).toString("utf8");
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
