import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { type ErrorBody, type RunningServer, startServer } from "./index.js";

// Every vLLM request field is honored or refused with a 400 naming it; none is silently dropped.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ model, port: 0, threads: 1, trustRequestChatTemplate: true });
});
afterAll(async () => {
  await server.close();
});

/** The fields of a completion's or a chat completion's reply these tests read. */
interface ReplyChoice {
  index: number;
  text: string;
  message: { role: string; content: string };
  logprobs: { tokens: string[]; token_logprobs: number[] } | null;
}
interface Reply {
  choices: [ReplyChoice, ...ReplyChoice[]];
  usage: { prompt_tokens: number; completion_tokens: number };
}

async function post<T = Reply>(path: string, body: object): Promise<{ status: number; json: T }> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as T };
}

const base = { prompt: "The lamp on the breakwater", max_tokens: 8, temperature: 0, ignore_eos: true };
const chat = { messages: [{ role: "user", content: "Orla" }], max_tokens: 4, temperature: 0 };

describe("request fields", () => {
  it.each([
    ["/v1/completions", { ...base, guided_choice: ["a", "b"] }, "guided_choice"],
    ["/v1/completions", { ...base, guided_regex: "a+" }, "guided_regex"],
    ["/v1/completions", { ...base, guided_json: { type: "object" } }, "guided_json"],
    ["/v1/completions", { ...base, response_format: { type: "json_object" } }, "response_format.type"],
    ["/v1/completions", { ...base, stream_options: { include_usage: true } }, "stream_options"],
    ["/v1/completions", { ...base, no_such_field: 1 }, "no_such_field"],
    ["/v1/completions", { ...base, use_beam_search: true }, "use_beam_search"],
    ["/v1/chat/completions", { ...chat, tool_choice: "auto" }, "tool_choice"],
    ["/v1/chat/completions", { ...chat, chat_template: "{% for m in messages %}" }, "chat_template"],
    ["/v1/chat/completions", { ...chat, chat_template: "{{ no_such_function() }}" }, "chat_template"],
  ])("%s refuses %j naming it", async (path, body, param) => {
    const { status, json } = await post<ErrorBody>(path, body);
    expect(status, JSON.stringify(json)).toBe(400);
    expect(json.error.param).toBe(param);
    expect(json.error.message).toContain(param.split(".")[0] as string);
  });

  it("answers n choices, best_of, and several prompts", async () => {
    const two = await post("/v1/completions", { ...base, n: 2, temperature: 1, seed: 5 });
    expect(two.json.choices.map((c: { index: number }) => c.index)).toEqual([0, 1]);
    expect(two.json.usage.completion_tokens).toBe(16);
    const best = await post("/v1/completions", { ...base, n: 1, best_of: 3, temperature: 1, seed: 5 });
    expect(best.json.choices).toHaveLength(1);
    expect(best.json.usage.completion_tokens).toBe(24);
    // best_of ranks by cumulative logprob though the request asked for none (and gets none shown).
    const all = await post("/v1/completions", { ...base, n: 3, temperature: 1, seed: 5, logprobs: 0 });
    const sums = all.json.choices.map((c) => (c.logprobs?.token_logprobs ?? []).reduce((s, lp) => s + lp, 0));
    expect(best.json.choices[0].text).toBe(all.json.choices[sums.indexOf(Math.max(...sums))]?.text);
    expect(best.json.choices[0].logprobs).toBeNull();
    const many = await post("/v1/completions", { ...base, prompt: ["Orla", "Tamsin counted"] });
    const one = await post("/v1/completions", { ...base, prompt: "Tamsin counted" });
    expect(many.json.choices).toHaveLength(2);
    expect(many.json.choices[1]?.text).toBe(one.json.choices[0].text);
    const chatN = await post("/v1/chat/completions", { ...chat, n: 3 });
    expect(chatN.json.choices).toHaveLength(3);
  });

  it("prefills the prompt once for n choices, each the answer of a separate request with its seed", async () => {
    const promptTokens = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(/^vllm:prompt_tokens_total\{[^}]*\} (\S+)$/m.exec(text)?.[1]);
    };
    const request = { ...base, max_tokens: 12, temperature: 1.2 };
    const separate: string[] = [];
    for (const seed of [40, 41, 42, 43])
      separate.push((await post("/v1/completions", { ...request, seed })).json.choices[0].text);
    const before = await promptTokens();
    const four = await post("/v1/completions", { ...request, n: 4, seed: 40 });
    expect(four.json.choices.map((c: { text: string }) => c.text)).toEqual(separate);
    expect(new Set(separate).size).toBe(4);
    expect((await promptTokens()) - before).toBe(four.json.usage.prompt_tokens);
  });

  it("echoes the last message as vLLM does: when it is in the answer's role", async () => {
    const greedy = await post("/v1/chat/completions", chat);
    const answer = greedy.json.choices[0].message.content as string;
    // With a generation prompt the answer is the assistant's and the user's message is not echoed.
    const echoUser = await post("/v1/chat/completions", { ...chat, echo: true });
    expect(echoUser.json.choices[0].message).toEqual({ role: "assistant", content: answer });
    const partial = [...chat.messages, { role: "assistant", content: "The boats" }];
    const continued = { ...chat, messages: partial, add_generation_prompt: false };
    const plain = await post("/v1/chat/completions", continued);
    const echoed = await post("/v1/chat/completions", { ...continued, echo: true });
    expect(echoed.json.choices[0].message).toEqual({
      role: "assistant",
      content: `The boats${plain.json.choices[0].message.content}`,
    });
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ ...continued, echo: true, stream: true }),
    });
    const deltas = (await res.text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: {"))
      .map((e) => JSON.parse(e.slice(6)).choices[0].delta);
    expect(deltas[0]).toEqual({ role: "assistant", content: "" });
    expect(deltas[1]).toEqual({ content: "The boats" });
    expect(deltas.map((d) => d.content ?? "").join("")).toBe(echoed.json.choices[0].message.content);
  });

  it("renders a request's own chat_template instead of the model's", async () => {
    const template = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}";
    const own = await post("/v1/chat/completions", { ...chat, chat_template: template });
    expect(own.status).toBe(200);
    const expected = model.tokenizer.encode("[user] Orla\n", { addSpecialTokens: false });
    expect(own.json.usage.prompt_tokens).toBe(expected.length);
    const asPrompt = await post("/v1/completions", { ...base, prompt: expected, max_tokens: 4 });
    expect(own.json.choices[0].message.content).toBe(asPrompt.json.choices[0].text);
  });

  it("honors the sampling fields: penalties, min_p, allowed ids, bad words, min_tokens", async () => {
    const greedy = await post("/v1/completions", { ...base, max_tokens: 16, logprobs: 0 });
    const ids = (r: { json: Reply }) =>
      (r.json.choices[0].logprobs?.tokens ?? []).map((t) => Number(t.slice("token_id:".length)));
    const asIds = await post("/v1/completions", {
      ...base,
      max_tokens: 16,
      logprobs: 0,
      return_tokens_as_token_ids: true,
    });
    const greedyIds = ids(asIds);
    expect(asIds.json.choices[0].text).toBe(greedy.json.choices[0].text);
    // A near-zero temperature is greedy, not NaN.
    const tiny = await post("/v1/completions", { ...base, max_tokens: 16, temperature: 1e-310 });
    expect(tiny.json.choices[0].text).toBe(greedy.json.choices[0].text);
    const allowed = [greedyIds[0] as number, 7];
    const only = await post("/v1/completions", {
      ...base,
      max_tokens: 16,
      logprobs: 0,
      return_tokens_as_token_ids: true,
      allowed_token_ids: allowed,
    });
    expect(ids(only).every((id) => allowed.includes(id))).toBe(true);
    const penalized = await post("/v1/completions", {
      ...base,
      max_tokens: 16,
      repetition_penalty: 5,
      frequency_penalty: 2,
      presence_penalty: 2,
    });
    expect(penalized.json.choices[0].text).not.toBe(greedy.json.choices[0].text);
    const minP = await post("/v1/completions", {
      ...base,
      max_tokens: 16,
      temperature: 5,
      min_p: 1,
      seed: 3,
    });
    expect(minP.json.choices[0].text).toBe(greedy.json.choices[0].text);
    // A generated token whose text tokenizes back to it alone: banning the word bans the token.
    const banned = greedyIds.find((id) => {
      const ids = model.tokenizer.encode(model.tokenizer.decode([id]), { addSpecialTokens: false });
      return ids.length === 1 && ids[0] === id;
    }) as number;
    const bad = await post("/v1/completions", {
      ...base,
      max_tokens: 16,
      logprobs: 0,
      return_tokens_as_token_ids: true,
      bad_words: [model.tokenizer.decode([banned])],
    });
    expect(ids(bad)).not.toContain(banned);
    const eos = await post("/v1/chat/completions", {
      ...chat,
      max_tokens: 12,
      min_tokens: 12,
      stop_token_ids: greedyIds,
    });
    expect(eos.json.usage.completion_tokens).toBe(12);
  });

  it("keeps every bit of a 64-bit seed", async () => {
    const at = (seed: string) =>
      fetch(`${server.url}/v1/completions`, {
        method: "POST",
        body: `{"prompt":"Orla","max_tokens":12,"temperature":1,"ignore_eos":true,"seed":${seed}}`,
      }).then((r) => r.json() as Promise<Reply>);
    const a = await at("9223372036854775807");
    const b = await at("9223372036854775806");
    expect(a.choices[0].text).not.toBe(b.choices[0].text);
    expect((await at("9223372036854775807")).choices[0].text).toBe(a.choices[0].text);
  });

  it("honors include_stop_str_in_output, truncate_prompt_tokens and continuous_usage_stats", async () => {
    const greedy = await post("/v1/completions", base);
    const text = greedy.json.choices[0].text as string;
    const stop = text.slice(2, 4);
    const kept = await post("/v1/completions", { ...base, stop: [stop], include_stop_str_in_output: true });
    expect(kept.json.choices[0].text.endsWith(stop)).toBe(true);
    // Like vLLM, stop strings are not checked before min_tokens tokens.
    const early = await post("/v1/completions", { ...base, stop: [stop], min_tokens: 8 });
    expect(early.json.choices[0].text).toBe(text);
    expect(early.json.usage.completion_tokens).toBe(8);
    const truncated = await post("/v1/completions", { ...base, truncate_prompt_tokens: 2 });
    expect(truncated.json.usage.prompt_tokens).toBe(2);
    const res = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({
        ...base,
        stream: true,
        stream_options: { include_usage: true, continuous_usage_stats: true },
      }),
    });
    const events = (await res.text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: {"))
      .map((e) => JSON.parse(e.slice(6)));
    expect(events.filter((e) => e.choices.length > 0).every((e) => e.usage !== null)).toBe(true);
  });

  it("names the token at fault on /detokenize", async () => {
    const { status, json } = await post<ErrorBody>("/detokenize", { tokens: [1, 10 ** 7] });
    expect(status).toBe(400);
    expect(json.error.param).toBe("tokens.1");
  });
});
