import { isAscii } from "node:buffer";
import { TextDecoder } from "node:util";
import { BringupError } from "../common/errors.js";

/** One server-sent event, stamped with when the bytes that completed it arrived. */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
  readonly id?: string;
  /** performance.now() when the chunk holding the event's final blank line was read. */
  readonly receivedAt: number;
}

/**
 * An incremental parser for the text/event-stream format (WHATWG HTML, "server-sent events").
 * Hand-written because the maintained parsers (eventsource-parser) do not stamp arrival times and
 * cost a callback per field; this one splits on line ends with indexOf only, for throughput.
 */
export class SseParser {
  private buffer = "";
  /** The event's data lines so far, joined by "\n"; undefined before its first data line. */
  private data: string | undefined;
  private eventName = "";
  private lastId: string | undefined;
  private sawField = false;
  private skipLeadingLf = false;

  /** Feeds decoded text that arrived at `at`; returns the events it completed. */
  push(text: string, at: number): SseEvent[] {
    const events: SseEvent[] = [];
    this.feed(text, at, (event) => events.push(event));
    return events;
  }

  /** As push, handing each completed event to `onEvent` as it is found. */
  feed(text: string, at: number, onEvent: (event: SseEvent) => void): void {
    let input = this.buffer.length > 0 ? this.buffer + text : text;
    if (this.skipLeadingLf && input.charCodeAt(0) === 10) input = input.slice(1);
    this.skipLeadingLf = false;
    let start = 0;
    // The next CR is looked up again only once the scan has passed it: most streams have none,
    // and searching the rest of a large read for one at every line would cost quadratic time.
    let cr = input.indexOf("\r");
    for (;;) {
      if (cr !== -1 && cr < start) cr = input.indexOf("\r", start);
      const lf = input.indexOf("\n", start);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        end = cr;
        if (cr + 1 === input.length) {
          // A CR at the end of a chunk may be the first half of CRLF: take the line, skip a leading LF next time.
          this.skipLeadingLf = true;
          next = cr + 1;
        } else {
          next = input.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
        }
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        break;
      }
      this.line(input, start, end, at, onEvent);
      start = next;
    }
    this.buffer = start === 0 ? input : input.slice(start);
  }

  /** Whether the stream ended inside an event (a partial line or fields without the closing blank line). */
  get pending(): boolean {
    return this.buffer.length > 0 || this.sawField;
  }

  /** The line input[start, end). */
  private line(
    input: string,
    start: number,
    end: number,
    at: number,
    onEvent: (event: SseEvent) => void,
  ): void {
    if (end === start) {
      if (this.data !== undefined) {
        onEvent({
          event: this.eventName || "message",
          data: this.data,
          ...(this.lastId !== undefined ? { id: this.lastId } : {}),
          receivedAt: at,
        });
      }
      this.data = undefined;
      this.eventName = "";
      this.sawField = false;
      return;
    }
    if (input.charCodeAt(start) === 58) return; // ":" starts a comment (keep-alive)
    this.sawField = true;
    let colon = input.indexOf(":", start);
    if (colon >= end) colon = -1;
    const field = input.slice(start, colon === -1 ? end : colon);
    let valueStart = colon === -1 ? end : colon + 1;
    if (input.charCodeAt(valueStart) === 32 && valueStart < end) valueStart++;
    const value = input.slice(valueStart, end);
    if (field === "data") this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    else if (field === "event") this.eventName = value;
    else if (field === "id" && !value.includes("\0")) this.lastId = value;
  }
}

/** One content-bearing piece of an OpenAI-style stream: the tokens it carried and when they arrived. */
export interface TokenChunk {
  readonly receivedAt: number;
  /** Tokens in this chunk: the length of its logprobs or token ids when the server sent them, else 1. */
  readonly tokens: number;
  readonly text: string;
}

export interface StreamUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** What an OpenAI-style completion or chat stream delivered. */
export interface TokenStream {
  readonly chunks: TokenChunk[];
  readonly usage?: StreamUsage;
  readonly finishReason?: string;
  /** Whether `data: [DONE]` arrived. */
  readonly done: boolean;
}

/**
 * Reads an OpenAI-compatible SSE stream (completions or chat) into timed token chunks. Throws
 * SSE_MALFORMED for data that is not JSON or not a completion chunk, SSE_ERROR_EVENT for an error
 * sent inside the stream, SSE_TRUNCATED when the stream ends before `[DONE]`. `onChunk` sees each
 * content chunk as it arrives (for a first-token callback); `onRead` each read of the body (for a
 * stall timer). For bodies that arrive through callbacks rather than an iterable, use
 * TokenStreamReader directly.
 */
export async function readTokenStream(
  body: AsyncIterable<Uint8Array>,
  options: { now?: () => number; onChunk?: (chunk: TokenChunk) => void; onRead?: () => void } = {},
): Promise<TokenStream> {
  const reader = new TokenStreamReader(options.onChunk);
  const now = options.now ?? (() => performance.now());
  for await (const bytes of body) {
    const at = now();
    options.onRead?.();
    reader.push(bytes, at);
  }
  return reader.end();
}

/**
 * The push side of readTokenStream: feed each read of the body with the time it arrived, then call
 * end(). Everything happens in the caller's turn (no promise, generator or stream per read), because
 * at hundreds of streams every deferred step per chunk shows up in the latency being measured.
 */
export class TokenStreamReader {
  private readonly state: StreamState = { chunks: [], done: false };
  private readonly parser = new SseParser();
  private decoder: TextDecoder | undefined;

  constructor(private readonly onChunk?: (chunk: TokenChunk) => void) {}

  /** Parses the bytes of one read that arrived at `at`; throws the SSE_* errors readTokenStream names. */
  push(bytes: Uint8Array, at: number): void {
    this.parser.feed(this.decode(bytes), at, this.onEvent);
  }

  private readonly onEvent = (event: SseEvent): void => readEvent(event, this.state, this.onChunk);

  /** Whether `data: [DONE]` has arrived. */
  get done(): boolean {
    return this.state.done;
  }

  /** The stream as read so far; throws SSE_TRUNCATED when `[DONE]` never came. */
  end(): TokenStream {
    const state = this.state;
    if (!state.done) {
      throw new BringupError(
        "SSE_TRUNCATED",
        this.parser.pending
          ? "the event stream ended inside an event, before data: [DONE]"
          : "the event stream ended before data: [DONE]",
      );
    }
    return {
      chunks: state.chunks,
      ...(state.usage ? { usage: state.usage } : {}),
      ...(state.finishReason ? { finishReason: state.finishReason } : {}),
      done: true,
    };
  }

  /**
   * ASCII reads (nearly all of them: JSON escapes non-ASCII text only if the server chooses to) are
   * sliced as latin1, which is several times cheaper than a validating decode; from the first
   * non-ASCII byte on, the streaming decoder takes over so characters split across reads survive.
   */
  private decode(bytes: Uint8Array): string {
    if (this.decoder === undefined && isAscii(bytes)) {
      const view = Buffer.isBuffer(bytes)
        ? bytes
        : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      return view.toString("latin1");
    }
    this.decoder ??= new TextDecoder("utf-8", { fatal: true });
    try {
      return this.decoder.decode(bytes, { stream: true });
    } catch (error) {
      throw new BringupError("SSE_MALFORMED", "the event stream is not valid UTF-8; check the server.", {
        cause: error,
      });
    }
  }
}

interface StreamState {
  chunks: TokenChunk[];
  usage?: StreamUsage;
  finishReason?: string;
  done: boolean;
}

function readEvent(
  event: SseEvent,
  state: StreamState,
  onChunk: ((chunk: TokenChunk) => void) | undefined,
): void {
  if (state.done) return;
  if (event.data === "[DONE]") {
    state.done = true;
    return;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(event.data);
  } catch {
    throw new BringupError("SSE_MALFORMED", `an event's data is not JSON: ${clip(event.data)}`);
  }
  if (!isObject(payload)) {
    throw new BringupError("SSE_MALFORMED", `an event's data is not a JSON object: ${clip(event.data)}`);
  }
  if (isObject(payload.error)) {
    const message = typeof payload.error.message === "string" ? payload.error.message : "no message";
    throw new BringupError("SSE_ERROR_EVENT", `the server sent an error inside the stream: ${message}`);
  }
  if (!Array.isArray(payload.choices)) {
    throw new BringupError("SSE_MALFORMED", `an event has no choices array: ${clip(event.data)}`);
  }
  if (isObject(payload.usage)) {
    const prompt = payload.usage.prompt_tokens;
    const completion = payload.usage.completion_tokens;
    if (typeof prompt === "number" && typeof completion === "number") {
      state.usage = { promptTokens: prompt, completionTokens: completion };
    }
  }
  for (const choice of payload.choices) {
    if (!isObject(choice)) {
      throw new BringupError("SSE_MALFORMED", `a choice is not an object: ${clip(event.data)}`);
    }
    if (typeof choice.finish_reason === "string") state.finishReason = choice.finish_reason;
    const text = choiceText(choice);
    const counted = tokenCount(choice);
    if (text.length === 0 && counted === undefined) continue;
    const chunk: TokenChunk = { receivedAt: event.receivedAt, tokens: counted ?? 1, text };
    if (chunk.tokens === 0) continue;
    state.chunks.push(chunk);
    onChunk?.(chunk);
  }
}

function choiceText(choice: Record<string, unknown>): string {
  if (typeof choice.text === "string") return choice.text;
  const delta = choice.delta;
  if (isObject(delta) && typeof delta.content === "string") return delta.content;
  return "";
}

/** Tokens a choice carried, when the server says: completions logprobs, chat logprobs, or vLLM's token_ids. */
function tokenCount(choice: Record<string, unknown>): number | undefined {
  if (Array.isArray(choice.token_ids)) return choice.token_ids.length;
  const logprobs = choice.logprobs;
  if (isObject(logprobs)) {
    if (Array.isArray(logprobs.tokens)) return logprobs.tokens.length;
    if (Array.isArray(logprobs.content)) return logprobs.content.length;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}
