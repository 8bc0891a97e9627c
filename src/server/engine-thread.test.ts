import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RunningServer, startServer } from "./index.js";
import { OutputBuffer } from "./output-buffer.js";
import type { LogLevel } from "./request-log.js";

// A generated tiny size runs the engine on its own thread: routes answer while it steps, every
// request is logged, slow clients are cut off, and closing drains then fails what is left.
const lines: { level: LogLevel; line: string }[] = [];
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({
    tinySize: "tiny",
    port: 0,
    threads: 1,
    log: (level, line) => lines.push({ level, line }),
  });
});
afterAll(async () => {
  await server.close();
});

const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);

describe("the engine on its own thread", () => {
  it("answers /metrics and /health while a request runs, showing it in flight", async () => {
    const prompt = Array.from({ length: 1500 }, (_, i) => 5 + (i % 200));
    const done = fetch(`${server.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt, max_tokens: 100, temperature: 0, ignore_eos: true }),
    });
    let finished = false;
    void done.then(() => {
      finished = true;
    });
    // Ask until the engine's figures show the request (they do from its acceptance on).
    let inFlight = 0;
    while (inFlight === 0 && !finished) {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      inFlight = metric(text, "vllm:num_requests_running") + metric(text, "vllm:num_requests_waiting");
    }
    expect(inFlight).toBe(1);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect((await done).status).toBe(200);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toContain("vllm:request_queue_time_seconds_count");
    expect(text).toContain("vllm:request_prompt_tokens_bucket");
    expect(text).toContain("process_resident_memory_bytes");
  });

  it("relays n sequences over one prefill, each the answer of a separate request with its seed", async () => {
    const post = (body: object) =>
      fetch(`${server.url}/v1/completions`, { method: "POST", body: JSON.stringify(body) }).then(
        (r) => r.json() as Promise<{ choices: { text: string }[]; usage: { prompt_tokens: number } }>,
      );
    const request = {
      prompt: "The lamp on the breakwater",
      max_tokens: 8,
      temperature: 1.2,
      ignore_eos: true,
    };
    const separate: string[] = [];
    for (const seed of [5, 6, 7]) separate.push((await post({ ...request, seed })).choices[0]?.text ?? "");
    const before = metric(await (await fetch(`${server.url}/metrics`)).text(), "vllm:prompt_tokens_total");
    const three = await post({ ...request, n: 3, seed: 5 });
    expect(three.choices.map((c) => c.text)).toEqual(separate);
    const after = metric(await (await fetch(`${server.url}/metrics`)).text(), "vllm:prompt_tokens_total");
    expect(after - before).toBe(three.usage.prompt_tokens);
  });

  it("logs one line per request and every error with its request id", async () => {
    const ok = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt: "Orla", max_tokens: 3, temperature: 0, ignore_eos: true }),
    });
    const id = ok.headers.get("x-request-id") as string;
    expect(((await ok.json()) as { id: string }).id).toBe(`cmpl-${id}`);
    const bad = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt: "Orla", temperature: -1 }),
    });
    const badId = bad.headers.get("x-request-id") as string;
    const line = lines.find((l) => l.line.includes(id))?.line ?? "";
    expect(line).toMatch(
      /^INFO .*"POST \/v1\/completions" 200 prompt_tokens=\d+ completion_tokens=3 finish_reason=length/,
    );
    expect(lines.some((l) => l.level === "warning" && l.line.includes(badId) && l.line.includes("400"))).toBe(
      true,
    );
  });
});

describe("a client that stops reading", () => {
  it("has its stream aborted past the unread limit, its socket closed and its KV freed", async () => {
    const logged: string[] = [];
    const own = await startServer({
      tinySize: "tiny",
      port: 0,
      threads: 1,
      maxUnreadOutputs: 8,
      log: (_, line) => logged.push(line),
    });
    try {
      const socket = connect(Number(new URL(own.url).port), "127.0.0.1");
      await new Promise((r) => socket.once("connect", r));
      // 16 choices of large events (20 alternatives a token) fill the socket's buffers soon.
      const body = JSON.stringify({
        prompt: "Orla",
        max_tokens: 1500,
        n: 16,
        temperature: 0,
        ignore_eos: true,
        logprobs: 20,
        stream: true,
      });
      socket.write(
        `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      // Read the response's start, then stop reading until the server gives up on this client.
      await new Promise((r) => socket.once("data", r));
      socket.pause();
      socket.on("error", () => undefined);
      while (!logged.some((l) => l.includes("client_too_slow"))) await new Promise((r) => setTimeout(r, 100));
      // The abort travels to the engine thread as a message; its step frees the sequences and the
      // response is logged after.
      await vi.waitFor(
        async () => {
          const text = await (await fetch(`${own.url}/metrics`)).text();
          expect(metric(text, "vllm:num_requests_running") + metric(text, "vllm:num_requests_waiting")).toBe(
            0,
          );
          expect(metric(text, "vllm:kv_cache_usage_perc")).toBe(0);
          expect(logged.some((l) => /"POST \/v1\/completions" 408 .*finish_reason=abort/.test(l))).toBe(true);
        },
        { timeout: 30_000, interval: 50 },
      );
      // The server closed the socket: reading again finds its end.
      const closed = new Promise((r) => socket.once("close", r));
      socket.resume();
      await closed;
    } finally {
      await own.close();
    }
  });
});

describe("OutputBuffer", () => {
  it("aborts a request whose reader falls more than the limit behind", async () => {
    let aborted = false;
    const buffer = new OutputBuffer(3, () => {
      aborted = true;
    });
    for (let i = 0; i < 5; i++)
      buffer.push({ finishReason: null, numPromptTokens: 1, numGeneratedTokens: i });
    expect(aborted).toBe(true);
    // What was buffered is still read; then the stream ends with the reason, and nothing more is kept.
    for (let i = 0; i < 4; i++) expect((await buffer.next()).done).toBe(false);
    await expect(buffer.next()).rejects.toThrow(/unread/);
  });
});

describe("closing", () => {
  it("drains, then ends the rest with 503 or an error event instead of a truncated 200", async () => {
    const own = await startServer({ tinySize: "tiny", port: 0, threads: 1 });
    const long = { prompt: "Orla", max_tokens: 1500, temperature: 0, ignore_eos: true };
    const plain = fetch(`${own.url}/v1/completions`, { method: "POST", body: JSON.stringify(long) });
    const streamed = fetch(`${own.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ ...long, stream: true }),
    }).then((r) => r.text());
    await new Promise((r) => setTimeout(r, 300));
    await own.close({ drainSeconds: 0.1 });
    const res = await plain;
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: number; message: string } }).error).toMatchObject({
      code: 503,
      message: expect.stringMatching(/shutting down/),
    });
    expect(await streamed).toMatch(/shutting down.*"code":503[\s\S]*\[DONE\]/);
  });
});
