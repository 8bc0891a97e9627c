import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { isBringupError } from "../common/errors.js";
import { ApiError, toApiError } from "./api-error.js";
import type { ServerContext } from "./context.js";
import { holdsLazyList, inTurns, jsonPieces } from "./json-stream.js";
import type { RequestRecord } from "./request-log.js";

/** vLLM refuses stream_options on a request that does not stream; so do we. */
export function requireStreamForOptions(body: { stream?: boolean | null; stream_options?: unknown }): void {
  if (body.stream_options != null && !body.stream)
    throw new ApiError(
      400,
      "`stream_options` can only be set when `stream` is true; set stream or drop stream_options.",
      "invalid_value",
      "stream_options",
    );
}

/**
 * Answers with an OpenAI-style event stream: each event is `data: <json>`, the last `data: [DONE]`.
 * When the client goes away, `abort` fires (the request's generation listens to it). An error
 * after the stream has started is sent as an error body event, as vLLM does, then [DONE]; the
 * request line is logged when the stream ends.
 */
export function eventStream(
  c: Context,
  abort: AbortController,
  ctx: Pick<ServerContext, "log">,
  record: RequestRecord,
  produce: (send: (event: unknown) => Promise<void>) => Promise<void>,
): Response {
  // The client stopped reading: a write may be waiting for it forever, so the socket is closed.
  const closeSocket = () => (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing?.destroy();
  abort.signal.addEventListener(
    "abort",
    () => {
      if (isBringupError(abort.signal.reason) && abort.signal.reason.code === "CLIENT_TOO_SLOW")
        closeSocket();
    },
    { once: true },
  );
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => abort.abort());
    const send = async (event: unknown) => {
      if (!holdsLazyList(event)) {
        await stream.writeSSE({ data: JSON.stringify(event) });
        return;
      }
      // A large event (prompt logprobs) is written in parts, an event-loop turn each.
      await stream.write("data: ");
      for await (const part of inTurns(jsonPieces(event))) await stream.write(part);
      await stream.write("\n\n");
    };
    let status = 200;
    try {
      await produce(send);
    } catch (error) {
      const api = toApiError(error);
      status = api.status;
      ctx.log.error(record, api.status, api.code, api.message);
      if (api.code === "client_too_slow") {
        // It is not reading: writing it an error would wait forever, so the socket is closed.
        closeSocket();
        ctx.log.request(record, status);
        return;
      }
      await send(api.body());
    }
    await stream.writeSSE({ data: "[DONE]" });
    ctx.log.request(record, status);
  });
}
