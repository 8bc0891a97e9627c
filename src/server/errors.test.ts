import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { type ErrorBody, type RunningServer, startServer } from "./index.js";

// Every refused request gets the right 4xx and an OpenAI error body whose message says what to fix.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
const KEY = "sekret";
let server: RunningServer;
/** The server's warning lines, which carry each refusal's stable code. */
const logged: string[] = [];

beforeAll(async () => {
  server = await startServer({
    model,
    port: 0,
    threads: 1,
    apiKey: KEY,
    maxModelLen: 64,
    log: (level, line) => {
      if (level === "warning") logged.push(line);
    },
  });
});
afterAll(async () => {
  await server.close();
});

interface Case {
  readonly name: string;
  readonly path?: string;
  readonly body: string | object;
  readonly headers?: Record<string, string>;
  readonly status: number;
  readonly code: string;
  readonly param?: string | null;
  /** Words the message must contain, so a person knows what to change. */
  readonly says: RegExp;
}

const auth = { authorization: `Bearer ${KEY}` };
const longPrompt = "the lamp ".repeat(60);

const cases: Case[] = [
  {
    name: "malformed JSON",
    body: '{"prompt": "hi",',
    status: 400,
    code: "invalid_json",
    says: /not valid JSON/,
  },
  {
    name: "a body that is not an object",
    body: "[1, 2]",
    status: 400,
    code: "invalid_json",
    says: /JSON object/,
  },
  {
    name: "an unknown model",
    body: { model: "gpt-4", prompt: "hi" },
    status: 404,
    code: "model_not_found",
    param: "model",
    says: /`gpt-4` does not exist.*serves `tiny`/,
  },
  {
    name: "a prompt over --max-model-len",
    body: { prompt: longPrompt, max_tokens: 1 },
    status: 400,
    code: "context_length_exceeded",
    says: /maximum context length is 64.*shorten the prompt/,
  },
  {
    name: "a prompt text longer than max-model-len tokens could be (refused before tokenizing)",
    body: { prompt: "x".repeat(200_000), max_tokens: 1 },
    status: 400,
    code: "context_length_exceeded",
    param: "prompt",
    says: /maximum context length is 64.*200000 characters/,
  },
  {
    name: "a token list longer than max-model-len",
    body: { prompt: Array.from({ length: 65 }, () => 5), max_tokens: 1 },
    status: 400,
    code: "context_length_exceeded",
    param: "prompt",
    says: /65 token ids/,
  },
  {
    name: "a chat with more messages than max-model-len",
    path: "/v1/chat/completions",
    body: { messages: Array.from({ length: 65 }, () => ({ role: "user", content: "" })), max_tokens: 1 },
    status: 400,
    code: "context_length_exceeded",
    param: "messages",
    says: /65 messages/,
  },
  {
    name: "a prompt that fits but leaves no room for max_tokens",
    body: { prompt: "hi", max_tokens: 100 },
    status: 400,
    code: "context_length_exceeded",
    param: "max_tokens",
    says: /lower max_tokens/,
  },
  {
    name: "a negative temperature",
    body: { prompt: "hi", temperature: -0.5 },
    status: 400,
    code: "invalid_value",
    param: "temperature",
    says: /temperature must be/,
  },
  {
    name: "top_p of 0",
    body: { prompt: "hi", top_p: 0 },
    status: 400,
    code: "invalid_value",
    param: "top_p",
    says: /top_p must be in \(0, 1\]/,
  },
  {
    name: "a fractional top_k",
    body: { prompt: "hi", top_k: 2.5 },
    status: 400,
    code: "invalid_value",
    param: "top_k",
    says: /`top_k`/,
  },
  {
    name: "max_tokens as a string",
    body: { prompt: "hi", max_tokens: "ten" },
    status: 400,
    code: "invalid_value",
    param: "max_tokens",
    says: /`max_tokens`.*expected/,
  },
  {
    name: "n above the cap",
    body: { prompt: "hi", n: 17 },
    status: 400,
    code: "invalid_value",
    param: "n",
    says: /`n`/,
  },
  {
    name: "too many logprobs",
    body: { prompt: "hi", logprobs: 50 },
    status: 400,
    code: "invalid_value",
    param: "logprobs",
    says: /`logprobs`/,
  },
  {
    name: "an empty stop string",
    body: { prompt: "hi", stop: [""] },
    status: 400,
    code: "invalid_value",
    param: "stop",
    says: /must not be empty/,
  },
  {
    name: "a token id outside the vocabulary",
    body: { prompt: [1, 999999] },
    status: 400,
    code: "invalid_prompt",
    says: /outside the vocabulary/,
  },
  {
    name: "an empty list of prompts",
    body: { prompt: [] },
    status: 400,
    code: "invalid_prompt",
    param: "prompt",
    says: /at least one prompt/,
  },
  {
    name: "a missing prompt",
    body: { max_tokens: 2 },
    status: 400,
    code: "invalid_value",
    param: "prompt",
    says: /`prompt`/,
  },
  {
    name: "no messages",
    path: "/v1/chat/completions",
    body: { messages: [] },
    status: 400,
    code: "invalid_value",
    param: "messages",
    says: /at least one message/,
  },
  {
    name: "top_logprobs without logprobs",
    path: "/v1/chat/completions",
    body: { messages: [{ role: "user", content: "hi" }], top_logprobs: 2 },
    status: 400,
    code: "invalid_value",
    param: "top_logprobs",
    says: /needs `logprobs: true`/,
  },
  {
    name: "a missing API key",
    body: { prompt: "hi" },
    headers: {},
    status: 401,
    code: "missing_api_key",
    says: /Authorization: Bearer/,
  },
  {
    name: "a wrong API key",
    body: { prompt: "hi" },
    headers: { authorization: "Bearer nope" },
    status: 401,
    code: "invalid_api_key",
    says: /key is wrong.*--api-key/,
  },
  {
    name: "an Authorization header of the wrong form",
    body: { prompt: "hi" },
    headers: { authorization: KEY },
    status: 401,
    code: "invalid_api_key",
    says: /Bearer <key>/,
  },
  {
    name: "a body far over what max_model_len needs",
    body: JSON.stringify({ prompt: "x".repeat(4 * 2 ** 20) }),
    status: 413,
    code: "body_too_large",
    says: /max_model_len \(64\)/,
  },
  {
    name: "a /tokenize body far over what max_model_len needs (refused before reading it)",
    path: "/tokenize",
    body: JSON.stringify({ prompt: "x".repeat(4 * 2 ** 20) }),
    status: 413,
    code: "body_too_large",
    says: /max_model_len \(64\)/,
  },
  {
    name: "an unknown route",
    path: "/v1/embeddings",
    body: { input: "hi" },
    status: 404,
    code: "not_found",
    says: /no route POST \/v1\/embeddings/,
  },
];

describe("error responses", () => {
  it.each(cases)("answers $name with $status", async (c) => {
    for (const stream of [false, true]) {
      const body =
        typeof c.body === "string" ? c.body : JSON.stringify({ ...c.body, ...(stream ? { stream } : {}) });
      const res = await fetch(`${server.url}${c.path ?? "/v1/completions"}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(c.headers ?? auth) },
        body,
      });
      // A streaming request is refused before its stream starts, with the same JSON error.
      expect(res.headers.get("content-type")).toContain("application/json");
      const json = (await res.json()) as ErrorBody;
      expect(res.status, JSON.stringify(json)).toBe(c.status);
      // vLLM's code is the status; the stable code is in the log line (request id first).
      expect(json.error.code).toBe(c.status);
      const id = res.headers.get("x-request-id") as string;
      expect(logged.find((l) => l.includes(id))).toContain(` ${c.status} ${c.code}: `);
      expect(json.error.message).toMatch(c.says);
      expect(json.error.type).toBe(
        c.status === 401
          ? "authentication_error"
          : c.status === 404
            ? "not_found_error"
            : "invalid_request_error",
      );
      if (c.param !== undefined) expect(json.error.param).toBe(c.param);
      if (typeof c.body === "string") break;
    }
  });

  it("keeps /health, /metrics and /version open without the API key, as vLLM does", async () => {
    for (const path of ["/health", "/metrics", "/version"])
      expect((await fetch(`${server.url}${path}`)).status).toBe(200);
    expect((await fetch(`${server.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${server.url}/v1/models`, { headers: auth })).status).toBe(200);
  });
});
