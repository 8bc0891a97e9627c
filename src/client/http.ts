import { Agent, fetch } from "undici";
import type { z } from "zod";
import { BringupError } from "../common/errors.js";

export interface RequestOptions {
  /** Milliseconds before the request is abandoned (default 60 000). */
  readonly timeoutMs?: number;
  readonly apiKey?: string;
}

export const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * One JSON request to an endpoint. Every way it can go wrong becomes a BringupError that names the
 * URL and what was missing: ENDPOINT_TIMEOUT, ENDPOINT_UNREACHABLE, ENDPOINT_HTTP_ERROR,
 * ENDPOINT_MALFORMED_JSON, ENDPOINT_RESPONSE_INVALID (the JSON lacks a field the caller needs).
 */
export async function requestJson<S extends z.ZodType>(
  url: string,
  schema: S,
  body: unknown | undefined,
  options: RequestOptions = {},
): Promise<z.infer<S>> {
  const text = await requestText(url, body, options);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new BringupError(
      "ENDPOINT_MALFORMED_JSON",
      `${url} answered with text that is not JSON (${preview(text)}); check that the URL points at an OpenAI-compatible server.`,
      { subject: url },
    );
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join(".") || "(root)";
    throw new BringupError(
      "ENDPOINT_RESPONSE_INVALID",
      `${url} answered without a usable "${field}" (${issue?.message ?? "invalid"}); the endpoint does not offer what this check needs.`,
      { subject: url },
    );
  }
  return parsed.data;
}

/**
 * A connection pool whose header and body timeouts are `timeoutMs`, one per timeout. fetch's own
 * pool cuts any answer whose headers take over 300 s (UND_ERR_HEADERS_TIMEOUT) whatever the
 * request's timeout says, and a non-streamed completion sends its headers only when it is done: a
 * 64K-token needle prefill on the embedded engine, on two shared cores, was cut so.
 */
const pools = new Map<number, Agent>();
function poolFor(timeoutMs: number): Agent {
  let pool = pools.get(timeoutMs);
  if (pool === undefined) {
    pool = new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    pools.set(timeoutMs, pool);
  }
  return pool;
}

/** GET (body undefined) or POST JSON, returning the body text of a 2xx answer. */
export async function requestText(
  url: string,
  body: unknown | undefined,
  options: RequestOptions = {},
): Promise<string> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`;
  const attempt = async () => {
    const response = await fetch(url, {
      method: body === undefined ? "GET" : "POST",
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
      dispatcher: poolFor(timeoutMs),
    });
    return { response, text: await response.text() };
  };
  const { response, text } = await attempt()
    .catch((error: unknown) => {
      // A pooled keep-alive connection that the server closed as it was reused (its idle timeout,
      // or a restart on the same port) fails with no answer: one new connection is tried.
      if (CLOSED_CONNECTION.has(causeCode(error) ?? "")) return attempt();
      throw error;
    })
    .catch((error: unknown) => {
      throw requestFailure(url, timeoutMs, error);
    });
  if (!response.ok) {
    throw new BringupError(
      "ENDPOINT_HTTP_ERROR",
      `${url} answered HTTP ${response.status}: ${preview(errorMessage(text))}`,
      { subject: url },
    );
  }
  return text;
}

/** undici's codes for the pool's own timeouts (poolFor), which are the request's timeout too. */
const POOL_TIMEOUT = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** undici's codes for a connection that the other side closed or reset before answering. */
const CLOSED_CONNECTION = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"]);

function causeCode(error: unknown): string | undefined {
  return (error as { cause?: { code?: string } }).cause?.code;
}

function requestFailure(url: string, timeoutMs: number, error: unknown): BringupError {
  const name = (error as Error).name;
  // The pool's header and body timers run for the same timeoutMs as the signal, so either may fire first.
  if (name === "TimeoutError" || name === "AbortError" || POOL_TIMEOUT.has(causeCode(error) ?? "")) {
    return new BringupError(
      "ENDPOINT_TIMEOUT",
      `${url} did not answer within ${timeoutMs} ms; check that the server is up and not overloaded, or raise --timeout.`,
      { subject: url, cause: error },
    );
  }
  // fetch says only "fetch failed"; the socket-level reason (ECONNREFUSED, other side closed) is its cause.
  const cause = (error as { cause?: { message?: string } }).cause;
  const detail = [causeCode(error), cause?.message].filter(Boolean).join(" ");
  return new BringupError(
    "ENDPOINT_UNREACHABLE",
    `${url} could not be reached (${(error as Error).message}${detail ? `: ${detail}` : ""}); check the address and that the server is running.`,
    { subject: url, cause: error },
  );
}

/** OpenAI's error body carries the message a person needs; other bodies are shown as they are. */
function errorMessage(text: string): string {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === "string") return message;
  } catch {
    // not JSON: show the text itself
  }
  return text;
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 120 ? `${flat.slice(0, 120)}...` : flat || "an empty body";
}
