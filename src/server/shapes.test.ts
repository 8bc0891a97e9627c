import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { type RunningServer, startServer } from "./index.js";

// Response shapes as vLLM returns them, read as raw JSON and SSE.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
const tok = model.tokenizer;
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ model, port: 0, threads: 1 });
});
afterAll(async () => {
  await server.close();
});

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field below.
type Json = any;

async function post(path: string, body: unknown): Promise<Json> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json;
}

/** The JSON events of an SSE response, checking that it ends with [DONE]. */
async function events(path: string, body: unknown): Promise<Json[]> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const data = (await res.text())
    .split("\n\n")
    .filter((e) => e.length > 0)
    .map((e) => e.replace(/^data: /, ""));
  expect(data.at(-1)).toBe("[DONE]");
  return data.slice(0, -1).map((d) => JSON.parse(d));
}

const prompt = "Tamsin counted the waves and walked in the pauses between them";
const promptIds = tok.encode(prompt);
const greedy = { prompt, temperature: 0, ignore_eos: true };

describe("completions", () => {
  it("echoes the prompt with logprobs in OpenAI's shape: tokens, token_logprobs, top_logprobs, text_offset", async () => {
    const res = await post("/v1/completions", { ...greedy, max_tokens: 4, echo: true, logprobs: 2 });
    const choice = res.choices[0];
    expect(choice.text.startsWith(prompt)).toBe(true);
    const lp = choice.logprobs;
    const n = promptIds.length + 4;
    for (const key of ["tokens", "token_logprobs", "top_logprobs", "text_offset"])
      expect(lp[key]).toHaveLength(n);
    expect(lp.tokens.slice(0, promptIds.length)).toEqual(promptIds.map((id) => tok.tokenText(id)));
    expect(lp.tokens.slice(0, promptIds.length).join("")).toBe(prompt);
    expect(lp.token_logprobs[0]).toBeNull();
    expect(lp.top_logprobs[0]).toBeNull();
    for (let i = 1; i < n; i++) {
      expect(lp.text_offset[i]).toBe(lp.text_offset[i - 1] + lp.tokens[i - 1].length);
      const top = lp.top_logprobs[i];
      // The top two plus the token itself (when it is not among them).
      expect(Object.keys(top).length).toBeGreaterThanOrEqual(2);
      expect(Object.keys(top).length).toBeLessThanOrEqual(3);
      expect(top[lp.tokens[i]]).toBe(lp.token_logprobs[i]);
      expect(lp.token_logprobs[i]).toBeLessThan(0);
    }
    // Greedy: each generated token is the most likely one.
    for (let i = promptIds.length; i < n; i++)
      expect(lp.token_logprobs[i]).toBe(Math.max(...(Object.values(lp.top_logprobs[i]) as number[])));
  });

  it("scores a prompt with max_tokens 0: vLLM's prompt_logprobs, null first, then token id -> {logprob, rank, decoded_token}", async () => {
    const res = await post("/v1/completions", {
      prompt,
      max_tokens: 0,
      echo: true,
      prompt_logprobs: 1,
      logprobs: 0,
    });
    const choice = res.choices[0];
    expect(choice.text).toBe(prompt);
    expect(choice.finish_reason).toBe("length");
    expect(res.usage).toEqual({
      prompt_tokens: promptIds.length,
      completion_tokens: 0,
      total_tokens: promptIds.length,
    });
    const pl = choice.prompt_logprobs;
    expect(pl).toHaveLength(promptIds.length);
    expect(pl[0]).toBeNull();
    for (let i = 1; i < promptIds.length; i++) {
      const id = promptIds[i] as number;
      const entry = pl[i][String(id)];
      expect(entry.decoded_token).toBe(tok.tokenText(id));
      expect(entry.rank).toBeGreaterThanOrEqual(1);
      // The echoed logprobs score the same tokens with the same numbers.
      expect(choice.logprobs.token_logprobs[i]).toBe(entry.logprob);
      const ranks = Object.values(pl[i]).map((e: Json) => e.rank);
      expect(ranks).toContain(1);
      expect(Object.keys(pl[i]).length).toBe(entry.rank === 1 ? 1 : 2);
    }
  });

  it("takes the prompt as token ids and answers as for the text", async () => {
    const fromText = await post("/v1/completions", { ...greedy, max_tokens: 6 });
    const fromIds = await post("/v1/completions", { ...greedy, prompt: promptIds, max_tokens: 6 });
    const nested = await post("/v1/completions", { ...greedy, prompt: [promptIds], max_tokens: 6 });
    expect(fromIds.choices[0].text).toBe(fromText.choices[0].text);
    expect(nested.choices[0].text).toBe(fromText.choices[0].text);
  });

  it("samples reproducibly with a seed", async () => {
    const body = { prompt, max_tokens: 10, temperature: 1, seed: 1234, ignore_eos: true };
    const a = await post("/v1/completions", body);
    const b = await post("/v1/completions", body);
    expect(a.choices[0].text).toBe(b.choices[0].text);
  });

  it("streams logprobs with offsets that continue across chunks", async () => {
    const whole = await post("/v1/completions", { ...greedy, max_tokens: 6, logprobs: 1 });
    const chunks = await events("/v1/completions", { ...greedy, max_tokens: 6, logprobs: 1, stream: true });
    const tokens = chunks.flatMap((c) => c.choices[0].logprobs?.tokens ?? []);
    const offsets = chunks.flatMap((c) => c.choices[0].logprobs?.text_offset ?? []);
    expect(tokens).toEqual(whole.choices[0].logprobs.tokens);
    expect(offsets).toEqual(whole.choices[0].logprobs.text_offset);
    expect(chunks.every((c) => c.object === "text_completion")).toBe(true);
  });
});

describe("stop strings", () => {
  const candidates = ["The lamp on the breakwater", "Orla", "Write down the boats.", prompt];

  /** A greedy output and a stop string from its middle (first seen there); the random weights make some outputs bytes only. */
  async function outputAndStop(): Promise<{ body: object; text: string; stop: string; at: number }> {
    for (const p of candidates) {
      const body = { prompt: p, temperature: 0, ignore_eos: true, max_tokens: 16 };
      const text: string = (await post("/v1/completions", body)).choices[0].text;
      for (let at = 3; at < text.length - 3; at++) {
        const stop = text.slice(at, at + 3);
        if (!stop.includes("\uFFFD") && text.indexOf(stop) === at) return { body, text, stop, at };
      }
    }
    throw new Error("no candidate prompt gives a usable stop string");
  }

  it("trims the output at the stop string and finishes with reason stop", async () => {
    const { body, text, stop, at } = await outputAndStop();
    const res = await post("/v1/completions", { ...body, stop: [stop, "never appears"] });
    expect(res.choices[0].text).toBe(text.slice(0, at));
    expect(res.choices[0].finish_reason).toBe("stop");
    expect(res.choices[0].stop_reason).toBe(stop);
  });

  it("trims the same way when streaming", async () => {
    const { body, text, stop, at } = await outputAndStop();
    const chunks = await events("/v1/completions", { ...body, stop, stream: true });
    expect(chunks.map((c) => c.choices[0].text).join("")).toBe(text.slice(0, at));
    expect(chunks.at(-1).choices[0].finish_reason).toBe("stop");
  });

  it("leaves the output whole when no stop string appears", async () => {
    const { body, text } = await outputAndStop();
    const res = await post("/v1/completions", { ...body, stop: "never appears" });
    expect(res.choices[0].text).toBe(text);
    expect(res.choices[0].finish_reason).toBe("length");
  });
});

describe("chat", () => {
  const messages = [{ role: "user", content: [{ type: "text", text: "Who keeps the lamp?" }] }];

  it("returns logprobs in the chat shape: content entries with token, logprob, bytes, top_logprobs", async () => {
    const res = await post("/v1/chat/completions", {
      messages,
      max_tokens: 5,
      temperature: 0,
      ignore_eos: true,
      logprobs: true,
      top_logprobs: 3,
    });
    const content = res.choices[0].logprobs.content;
    expect(content).toHaveLength(5);
    for (const entry of content) {
      expect(entry.bytes).toEqual([...Buffer.from(entry.token, "utf8")]);
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.logprob).toBe(entry.top_logprobs[0].logprob);
    }
    expect(content.map((e: Json) => e.token).join("")).toBe(res.choices[0].message.content);
  });

  it("streams logprobs per delta in the chat shape", async () => {
    const chunks = await events("/v1/chat/completions", {
      messages,
      max_tokens: 5,
      temperature: 0,
      ignore_eos: true,
      logprobs: true,
      stream: true,
    });
    expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
    const entries = chunks.flatMap((c) => c.choices[0].logprobs?.content ?? []);
    expect(entries).toHaveLength(5);
    expect(entries.every((e: Json) => e.top_logprobs.length === 0)).toBe(true);
  });
});

describe("tokenize, detokenize, models, health, version, metrics", () => {
  it("tokenizes a prompt and chat messages in vLLM's shape and detokenizes back", async () => {
    const t = await post("/tokenize", { prompt });
    expect(t).toEqual({
      count: promptIds.length,
      max_model_len: server.limits.maxModelLen,
      tokens: promptIds,
      token_strs: null,
    });
    expect(await post("/detokenize", { tokens: promptIds })).toEqual({ prompt });
    const chat = await post("/tokenize", { messages: [{ role: "user", content: "hi" }] });
    expect(chat.tokens).toEqual(
      tok.encode(tok.applyChatTemplate([{ role: "user", content: "hi" }]), { addSpecialTokens: false }),
    );
  });

  it("answers /health, /version and /v1/models", async () => {
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect(await (await fetch(`${server.url}/version`)).json()).toMatchObject({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
    const models: Json = await (await fetch(`${server.url}/v1/models`)).json();
    expect(models.data).toEqual([
      expect.objectContaining({ id: "tiny", object: "model", max_model_len: server.limits.maxModelLen }),
    ]);
  });

  it("exports vLLM-named Prometheus metrics that count what was served", async () => {
    const read = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const value = (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m").exec(text)?.[1]);
      return { text, value };
    };
    const before = await read();
    await post("/v1/completions", { ...greedy, max_tokens: 3 });
    const after = await read();
    expect(after.value("vllm:generation_tokens_total") - before.value("vllm:generation_tokens_total")).toBe(
      3,
    );
    expect(after.value("vllm:prompt_tokens_total") - before.value("vllm:prompt_tokens_total")).toBe(
      promptIds.length,
    );
    expect(
      after.value("vllm:time_to_first_token_seconds_count") -
        before.value("vllm:time_to_first_token_seconds_count"),
    ).toBe(1);
    expect(
      after.value("vllm:inter_token_latency_seconds_count") -
        before.value("vllm:inter_token_latency_seconds_count"),
    ).toBe(2);
    expect(after.value("bringup:kv_cache_blocks_used")).toBe(0);
    expect(after.value("bringup:kv_cache_blocks_total")).toBeGreaterThan(0);
    expect(after.value("bringup:kv_cache_token_capacity")).toBe(
      after.value("bringup:kv_cache_blocks_total") * 16,
    );
    for (const name of [
      "vllm:num_requests_running",
      "vllm:num_requests_waiting",
      "vllm:kv_cache_usage_perc",
      "vllm:e2e_request_latency_seconds_count",
    ]) {
      expect(after.text).toContain(name);
    }
  });
});
