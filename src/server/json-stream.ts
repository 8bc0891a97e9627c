import type { Context } from "hono";

/**
 * A list whose items are made only as it is serialized, so a large answer (prompt logprobs of a
 * long prompt) is built and sent in pieces instead of at once on the HTTP thread.
 */
export class LazyList<T> {
  constructor(
    readonly length: number,
    readonly item: (index: number) => T,
  ) {}

  /** Whole, for JSON.stringify (small answers and tests). */
  toJSON(): T[] {
    return Array.from({ length: this.length }, (_, i) => this.item(i));
  }
}

/** Whether a value holds a LazyList anywhere (then it is sent in pieces). */
export function holdsLazyList(value: unknown): boolean {
  if (value instanceof LazyList) return true;
  if (Array.isArray(value)) return value.some(holdsLazyList);
  if (typeof value === "object" && value !== null) return Object.values(value).some(holdsLazyList);
  return false;
}

/** JSON text of `value` in small pieces: one leaf, key or list item at a time (as JSON.stringify writes it). */
export function* jsonPieces(value: unknown): Generator<string> {
  if (value instanceof LazyList) {
    yield "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ",";
      yield* jsonPieces(value.item(i));
    }
    yield "]";
  } else if (Array.isArray(value)) {
    yield "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ",";
      const item: unknown = value[i];
      yield* item === undefined || typeof item === "function" ? ["null"] : jsonPieces(item);
    }
    yield "]";
  } else if (typeof value === "object" && value !== null && !("toJSON" in value)) {
    yield "{";
    let first = true;
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined || typeof item === "function") continue;
      yield `${first ? "" : ","}${JSON.stringify(key)}:`;
      first = false;
      yield* jsonPieces(item);
    }
    yield "}";
  } else yield JSON.stringify(value) ?? "null";
}

/** Bytes (roughly: characters) written before the HTTP thread lets other work run. */
const PIECE_CHARS = 64 * 1024;

/** `pieces` joined into parts of about PIECE_CHARS, each made in an event-loop turn of its own. */
export async function* inTurns(pieces: Iterator<string>): AsyncGenerator<string> {
  for (;;) {
    await new Promise((resolve) => setImmediate(resolve));
    let part = "";
    let next = pieces.next();
    while (!next.done) {
      part += next.value;
      if (part.length >= PIECE_CHARS) break;
      next = pieces.next();
    }
    if (part !== "") yield part;
    if (next.done) return;
  }
}

/**
 * A JSON answer. One holding a LazyList is serialized and sent in parts, an event-loop turn
 * each, so building a large answer never holds /health or other requests for long.
 */
export function jsonResponse(c: Context, value: unknown): Response {
  if (!holdsLazyList(value)) return c.json(value);
  const parts = inTurns(jsonPieces(value));
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await parts.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await parts.return(undefined);
    },
  });
  return c.body(body, 200, { "Content-Type": "application/json" });
}
