import { connect } from "node:net";
import OpenAI from "openai";
import { Pool } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { type RunningServer, startServer } from "./index.js";

// Issue 27, items 2 and 4: a body refused before it is read leaves the connection usable for every
// kind of client, and a batch of prompts may be as large as its prompts need.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
const CAP = 2 * 1024 * 1024;
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ model, port: 0, threads: 1, maxModelLen: 2048, maxRequestBodyBytes: CAP });
});
afterAll(async () => {
  await server.close();
});

const overCap = JSON.stringify({ prompt: "x".repeat(CAP + 1024), max_tokens: 1 });
const valid = JSON.stringify({ prompt: "The lamp", max_tokens: 2 });
const json = { "content-type": "application/json" };

describe("a refusal before the body is read", () => {
  it("leaves undici's one pooled connection usable after each 413", async () => {
    const pool = new Pool(server.url, { connections: 1, pipelining: 1 });
    const send = async (path: string, body: string) => {
      const res = await pool.request({ path, method: "POST", body, headers: json });
      return { status: res.statusCode, answer: (await res.body.json()) as { error?: { code: number } } };
    };
    try {
      for (let i = 0; i < 5; i++) {
        expect(await send("/v1/completions", overCap)).toMatchObject({
          status: 413,
          answer: { error: { code: 413 } },
        });
        expect((await send("/v1/completions", valid)).status).toBe(200);
      }
      // A request to no route with an oversized body is refused before reading too.
      expect((await send("/v1/nothing", overCap)).status).toBe(413);
      expect((await send("/v1/completions", valid)).status).toBe(200);
    } finally {
      await pool.close();
    }
  });

  it("gives the openai SDK without retries the 413 itself, every time", async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    for (let i = 0; i < 3; i++) {
      const error = await client.completions
        .create({ model: "tiny", prompt: "x".repeat(CAP + 1024), max_tokens: 1 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
    }
  });

  it("answers a client that sends the whole body before reading (as Python's http.client does)", async () => {
    const url = new URL(server.url);
    for (const size of [4, 16]) {
      const body = Buffer.alloc(size * 1024 * 1024, "x");
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname);
        let text = "";
        socket.on("error", reject);
        socket.on("data", (chunk) => {
          text += chunk.toString("latin1");
        });
        socket.on("end", () => resolve(text));
        socket.on("close", () => resolve(text));
        socket.write(
          `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
        );
        // Only after the whole body went out does this client read (its writes must not fail).
        socket.write(body, (error) => (error ? reject(error) : undefined));
      });
      expect(answer).toMatch(/^HTTP\/1\.1 413 /);
      expect(answer).toContain("--max-request-body-size");
    }
  });
});

describe("body limits follow vLLM's per-prompt sizes", () => {
  it("takes a batch of long token-id prompts past one prompt's size, each checked on its own", async () => {
    // 64 prompts of 2000 ids (about 500 KB, more than one max_model_len prompt's bytes) and one
    // over max_model_len: the body passes its size check and that prompt is refused by name
    // before any prompt reaches the engine.
    const prompts = Array.from({ length: 65 }, (_, p) =>
      Array.from({ length: p === 64 ? 2049 : 2000 }, (_, i) => 3 + ((p * 7919 + i * 104729) % 500)),
    );
    const body = JSON.stringify({ prompt: prompts, max_tokens: 1 });
    expect(body.length).toBeGreaterThan(400_000);
    const res = await fetch(`${server.url}/v1/completions`, { method: "POST", body, headers: json });
    const { error } = (await res.json()) as { error: { message: string } };
    expect(res.status).toBe(400);
    expect(error.message).toMatch(/maximum context length is 2048.*2049 token ids/);
  });

  it("refuses a body larger than its one prompt needs, naming the sizes", async () => {
    const body = JSON.stringify({ prompt: "hi", max_tokens: 1, user: "u".repeat(1024 * 1024) });
    const res = await fetch(`${server.url}/v1/completions`, { method: "POST", body, headers: json });
    expect(res.status).toBe(413);
    const { error } = (await res.json()) as { error: { message: string } };
    expect(error.message).toMatch(/1 prompt\(s\) of at most max_model_len \(2048\) tokens/);
  });
});
