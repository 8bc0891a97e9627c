import { describe, expect, it } from "vitest";
import { BringupError } from "../common/errors.js";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { startServer } from "./index.js";

const model = await createTinyModel(findTinySize("tiny") as TinySize);

describe("startServer", () => {
  it("refuses a port that is taken, saying which", async () => {
    const first = await startServer({ model, port: 0, threads: 1 });
    try {
      const port = Number(new URL(first.url).port);
      const second = startServer({ model, port, threads: 1 });
      await expect(second).rejects.toThrow(BringupError);
      await expect(second).rejects.toMatchObject({
        code: "SERVE_LISTEN_FAILED",
        subject: `127.0.0.1:${port}`,
      });
    } finally {
      await first.close();
    }
  });

  it("closes while a stream is in flight: the stream ends and close returns", async () => {
    const server = await startServer({ model, port: 0, threads: 1 });
    const res = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt: "Orla", max_tokens: 1500, ignore_eos: true, stream: true }),
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await server.close();
    // Whatever arrived before the connection went, the stream ends rather than hanging.
    for (;;) {
      const next = await reader.read().catch(() => ({ done: true }));
      if (next.done) break;
    }
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });
});
