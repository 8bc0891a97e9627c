import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { toApiError } from "./api-error.js";

/**
 * Answers with an OpenAI-style event stream: each event is `data: <json>`, the last `data: [DONE]`.
 * When the client goes away, `abort` fires (the request's generation listens to it). An error
 * after the stream has started is sent as an error body event, as vLLM does, then [DONE].
 */
export function eventStream(
  c: Context,
  abort: AbortController,
  produce: (send: (event: unknown) => Promise<void>) => Promise<void>,
): Response {
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => abort.abort());
    const send = async (event: unknown) => {
      await stream.writeSSE({ data: JSON.stringify(event) });
    };
    try {
      await produce(send);
    } catch (error) {
      await send(toApiError(error).body());
    }
    await stream.writeSSE({ data: "[DONE]" });
  });
}
