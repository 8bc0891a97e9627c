import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { type ErrorBody, type RunningServer, startServer } from "./index.js";

// Issue 27, item 1: a request's own chat template is the client's code. vLLM refuses it unless
// started with --trust-request-chat-template (vllm/entrypoints/openai/serving_engine.py,
// _validate_chat_template); trusted, it renders here in a process of its own under a budget.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
let untrusting: RunningServer;
let trusting: RunningServer;
/** Trusts templates with little time for them (the other has time enough for any heap to fill). */
let hurried: RunningServer;

beforeAll(async () => {
  const trusted = (milliseconds: number) =>
    startServer({
      model,
      port: 0,
      threads: 1,
      trustRequestChatTemplate: true,
      requestTemplateBudget: { milliseconds, heapMiB: 64 },
    });
  [untrusting, trusting, hurried] = await Promise.all([
    startServer({ model, port: 0, threads: 1 }),
    trusted(60_000),
    trusted(500),
  ]);
});
afterAll(async () => {
  await Promise.all([untrusting.close(), trusting.close(), hurried.close()]);
});

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field below.
type Json = any;

async function post(
  server: RunningServer,
  path: string,
  body: object,
): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const messages = [{ role: "user", content: "Orla" }];
const chat = { messages, max_tokens: 2, temperature: 0 };
const plain = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}";
/** 10^8 numbers: the heap runs out long before the loop ends (it killed the server before). */
const allocates = "{% for i in range(100000000) %}{% endfor %}x";
/** 10^9 empty turns over small lists: only the clock stops it. */
const loops =
  "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}{% endfor %}x";

describe("request chat templates", () => {
  it("are refused by name unless serve trusts them, on chat and /tokenize", async () => {
    for (const [path, body] of [
      ["/v1/chat/completions", { ...chat, chat_template: plain }],
      ["/tokenize", { messages, chat_template: plain }],
    ] as const) {
      const { status, json } = await post(untrusting, path, body);
      expect(status, JSON.stringify(json)).toBe(400);
      expect((json as ErrorBody).error.param).toBe("chat_template");
      expect((json as ErrorBody).error.message).toMatch(/--trust-request-chat-template/);
    }
  });

  it("render when trusted, on chat and on /tokenize", async () => {
    const expected = model.tokenizer.encode("[user] Orla\n", { addSpecialTokens: false });
    const own = await post(trusting, "/v1/chat/completions", { ...chat, chat_template: plain });
    expect(own.status, JSON.stringify(own.json)).toBe(200);
    expect(own.json.usage.prompt_tokens).toBe(expected.length);
    const counted = await post(trusting, "/tokenize", { messages, chat_template: plain });
    expect(counted.json.tokens).toEqual(expected);
  });

  it.each([
    ["allocates past its heap", allocates, /64 MiB of heap/, () => trusting],
    ["loops past its time", loops, /500 ms/, () => hurried],
  ])("that %s is a 400 naming the budget while every route answers", async (_, template, says, which) => {
    const server = which();
    const rendering = post(server, "/v1/chat/completions", { ...chat, chat_template: template });
    let settled = false;
    void rendering.then(() => {
      settled = true;
    });
    // While it renders, the server answers: /health and a request on the model's template.
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect((await post(server, "/v1/chat/completions", chat)).status).toBe(200);
    expect(settled).toBe(false);
    const { status, json } = await rendering;
    expect(status).toBe(400);
    expect((json as ErrorBody).error.param).toBe("chat_template");
    expect((json as ErrorBody).error.message).toMatch(says);
    // The next template renders in a fresh process.
    expect((await post(server, "/tokenize", { messages, chat_template: plain })).status).toBe(200);
  });

  it("a result over what the context could hold is refused where it renders", async () => {
    const { status, json } = await post(trusting, "/v1/chat/completions", {
      ...chat,
      chat_template: "{% for i in range(300000) %}{{ i }}{% endfor %}",
    });
    expect(status).toBe(400);
    expect((json as ErrorBody).error.message).toMatch(/rendered \d+ characters, more than the \d+ allowed/);
  });
});
