import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { METRIC_NAMES, type RunningServer, startServer } from "./index.js";

// Many streaming clients at once, a quarter of them hanging up mid-stream: the server keeps
// serving, and every aborted request gives its KV blocks back.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ model, port: 0, threads: 1 });
});
afterAll(async () => {
  await server.close();
});

const CLIENTS = 200;
const prompts = ["The lamp on the breakwater", "Orla", "Write down the boats.", "Tamsin counted the waves"];

/** A small seeded generator, so the choice of who hangs up (and when) is random but repeatable. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function body(i: number, maxTokens: number, stream: boolean): { path: string; json: object } {
  const prompt = prompts[i % prompts.length] as string;
  const common = { max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream };
  return i % 2 === 0
    ? { path: "/v1/completions", json: { prompt, ...common } }
    : { path: "/v1/chat/completions", json: { messages: [{ role: "user", content: prompt }], ...common } };
}

/** The text of a finished response, streamed or not. */
function textOf(
  events: { choices: { text?: string; delta?: { content?: string }; message?: { content: string } }[] }[],
): string {
  return events
    .map((e) => e.choices.map((c) => c.text ?? c.delta?.content ?? c.message?.content ?? "").join(""))
    .join("");
}

/**
 * Streams one request. A client that `leaveAfter` events hangs up then; otherwise it reads to
 * [DONE] and returns the events.
 */
async function streamingClient(
  i: number,
  maxTokens: number,
  leaveAfter?: number,
): Promise<{ events: object[]; done: boolean }> {
  const { path, json } = body(i, maxTokens, true);
  const abort = new AbortController();
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    body: JSON.stringify(json),
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: object[] = [];
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { events, done: false };
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const data = buffer.slice(0, end).replace(/^data: /, "");
      buffer = buffer.slice(end + 2);
      if (data === "[DONE]") return { events, done: true };
      events.push(JSON.parse(data));
      if (leaveAfter !== undefined && events.length >= leaveAfter) {
        abort.abort();
        return { events, done: false };
      }
      end = buffer.indexOf("\n\n");
    }
  }
}

async function metrics(): Promise<(name: string, labels?: string) => number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return (name, labels = "") => {
    const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(labels));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
  };
}

/** Waits (bounded) until the engine has nothing running, waiting or held in the KV cache. */
async function settled(): Promise<(name: string, labels?: string) => number> {
  return vi.waitFor(
    async () => {
      const m = await metrics();
      expect([m(METRIC_NAMES.running), m(METRIC_NAMES.waiting), m(METRIC_NAMES.kvBlocksUsed)]).toEqual([
        0, 0, 0,
      ]);
      return m;
    },
    { timeout: 20_000, interval: 50 },
  );
}

describe("reliability", () => {
  it(`serves ${CLIENTS} concurrent streams with a quarter hanging up at random, then holds no KV blocks`, async () => {
    const expected = await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const { path, json } = body(i, 8, false);
        const res = await fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(json) });
        return textOf([(await res.json()) as never]);
      }),
    );
    const random = mulberry32(4);
    const order = Array.from({ length: CLIENTS }, (_, i) => i).sort(() => random() - 0.5);
    const leavers = new Set(order.slice(0, CLIENTS / 4));
    const results = await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) =>
        // Leavers ask for many tokens and hang up after one to three events, so they leave mid-request.
        leavers.has(i) ? streamingClient(i, 256, 1 + Math.floor(random() * 3)) : streamingClient(i, 8),
      ),
    );
    results.forEach((r, i) => {
      if (leavers.has(i)) return;
      expect(r.done).toBe(true);
      expect(textOf(r.events as never)).toBe(expected[i % prompts.length]);
    });

    const m = await settled();
    const finished = (reason: string) => m(METRIC_NAMES.requestSuccess, `finished_reason="${reason}"`);
    expect(finished("length")).toBeGreaterThanOrEqual(4 + (CLIENTS * 3) / 4);
    expect(finished("abort")).toBeGreaterThan(0);
    expect(finished("length") + finished("abort")).toBe(4 + CLIENTS);

    // Still serving, with the same answers.
    const again = await streamingClient(0, 8);
    expect(textOf(again.events as never)).toBe(expected[0]);
  });

  it("aborts a non-streaming request whose client hangs up, and frees its blocks", async () => {
    const before = (await settled())(METRIC_NAMES.requestSuccess, 'finished_reason="abort"');
    const abort = new AbortController();
    const { path, json } = body(0, 1800, false);
    const pending = fetch(`${server.url}${path}`, {
      method: "POST",
      body: JSON.stringify(json),
      signal: abort.signal,
    }).catch((e: Error) => e);
    await vi.waitFor(async () => expect((await metrics())(METRIC_NAMES.kvBlocksUsed)).toBeGreaterThan(0), {
      timeout: 20_000,
      interval: 20,
    });
    abort.abort();
    expect(await pending).toBeInstanceOf(Error);
    const after = await settled();
    expect(after(METRIC_NAMES.requestSuccess, 'finished_reason="abort"')).toBe(before + 1);
  });
});
