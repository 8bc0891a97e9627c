import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startServer } from "../server/index.js";
import { runBench } from "./run.js";
import { randomWorkload } from "./workload.js";

const chunk = (text: string) => `data: ${JSON.stringify({ choices: [{ index: 0, text }] })}\n\n`;
const usage = (completion: number) =>
  `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 4, completion_tokens: completion } })}\n\n`;

/** A server that misbehaves in turn, one way per request: answers well, errors, stalls, drops, garbles. */
function misbehaving(): Promise<{ url: string; server: Server }> {
  let count = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      if (request.url === "/tokenize") {
        response.writeHead(404).end();
        return;
      }
      const kind = count++ % 7;
      if (kind === 1) {
        response.writeHead(500, { "content-type": "application/json" }).end('{"error":{"message":"boom"}}');
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(chunk("a"));
      if (kind === 0) response.end(`${chunk("b")}${chunk("c")}${usage(3)}data: [DONE]\n\n`);
      else if (kind === 2)
        return; // stalls: the stream stays open and silent
      else if (kind === 3) response.socket?.destroy();
      else if (kind === 4) response.end("data: {not json\n\n");
      else if (kind === 5) response.end(`data: ${JSON.stringify({ error: { message: "engine died" } })}\n\n`);
      else response.end(chunk("b"));
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server });
    });
  });
}

describe("runBench against a misbehaving endpoint", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((done) => server?.close(done));
  });

  it("counts each failed request with its reason and completes the run", async () => {
    const started = await misbehaving();
    server = started.server;
    const seen: number[] = [];
    const result = await runBench({
      target: { url: started.url, model: "m" },
      workload: randomWorkload({ numPrompts: 14, inputLen: 4, outputLen: 3, seed: 2 }),
      maxConcurrency: 1,
      stallTimeoutMs: 200,
      percentiles: [50, 99],
      onRequest: (r) => seen.push(r.index),
    });
    expect(seen.length).toBe(14);
    expect(result.metrics.completed).toBe(2);
    expect(result.metrics.failed).toBe(12);
    expect(result.metrics.failures).toEqual({
      "http-error": 2,
      stall: 2,
      connection: 2,
      "malformed-sse": 2,
      "error-event": 2,
      truncated: 2,
    });
    expect(result.requests.find((r) => r.failure?.reason === "http-error")?.failure?.message).toMatch(
      /HTTP 500.*boom/,
    );
    expect(result.metrics.totalOutputTokens).toBe(6);
    expect(result.metrics.ttft.count).toBe(2);
    expect(result.metrics.itl.count).toBe(4);
    expect(result.tokenizerSkipped).toMatch(/404/);
  });
});

describe("runBench against the embedded server", () => {
  it("measures streaming and non-streaming requests, with usage matching the stream's token count", async () => {
    const server = await startServer({ tinySize: "tiny", port: 0, threads: 1 });
    try {
      const workload = randomWorkload({ numPrompts: 3, inputLen: 8, outputLen: 5, seed: 4 });
      const target = { url: server.url, model: server.modelName, ignoreEos: true };
      const streamed = await runBench({ target, workload, maxConcurrency: 2 });
      expect(streamed.metrics.completed).toBe(3);
      expect(streamed.metrics.totalOutputTokens).toBe(15);
      expect(streamed.metrics.tokenCheck.streamMismatches).toBe(0);
      expect(streamed.metrics.tokenCheck.tokenizerMismatches).toBeDefined();
      expect(streamed.metrics.itl.count).toBe(12);
      const whole = await runBench({ target: { ...target, stream: false }, workload, checkTokenizer: false });
      expect(whole.metrics.completed).toBe(3);
      expect(whole.requests.every((r) => r.chunkTokens[0] === 5)).toBe(true);
    } finally {
      await server.close();
    }
  });
});
