import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, Engine, findTinySize, type TinySize } from "../engine/index.js";
import { type RunningServer, startServer } from "./index.js";

// The official openai npm client, which no one here wrote, drives the server.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
const reference = new Engine(model, { threads: 1 });
let server: RunningServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startServer({ model, port: 0, threads: 1, servedModelName: "tiny-ref", apiKey: "test-key" });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "test-key", maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
  await reference.close();
});

/** vLLM's extra body field, which the client passes through untouched. */
const ignoreEos = { ignore_eos: true } as object;

/** The text the engine itself generates greedily for these prompt tokens. */
async function greedyText(promptTokenIds: number[], maxTokens: number): Promise<string> {
  const detok = model.tokenizer.createDetokenizer();
  let text = "";
  for await (const out of reference.submit({
    promptTokenIds,
    maxTokens,
    sampling: { temperature: 0 },
    ignoreEos: true,
  })) {
    if (out.token) text += detok.push(out.token.tokenId);
  }
  return text + detok.flush();
}

const prompt = "The lamp on the breakwater";
const messages = [{ role: "user" as const, content: "Who keeps the lamp?" }];

describe("the server driven by the openai client", () => {
  it("lists the served model", async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["tiny-ref"]);
  });

  it("completes a prompt exactly as the engine does", async () => {
    const res = await client.completions.create({
      model: "tiny-ref",
      prompt,
      max_tokens: 8,
      temperature: 0,
      ...ignoreEos,
    });
    expect(res.choices[0]?.text).toBe(await greedyText(model.tokenizer.encode(prompt), 8));
    expect(res.choices[0]?.finish_reason).toBe("length");
    expect(res.usage).toEqual({
      prompt_tokens: model.tokenizer.encode(prompt).length,
      completion_tokens: 8,
      total_tokens: model.tokenizer.encode(prompt).length + 8,
    });
  });

  it("streams the same completion chunk by chunk", async () => {
    const whole = await client.completions.create({
      model: "tiny-ref",
      prompt,
      max_tokens: 8,
      temperature: 0,
      ...ignoreEos,
    });
    const stream = await client.completions.create({
      model: "tiny-ref",
      prompt,
      max_tokens: 8,
      temperature: 0,
      stream: true,
      ...ignoreEos,
    });
    const pieces: string[] = [];
    const reasons: (string | null | undefined)[] = [];
    for await (const chunk of stream) {
      pieces.push(chunk.choices[0]?.text ?? "");
      reasons.push(chunk.choices[0]?.finish_reason);
    }
    expect(pieces.join("")).toBe(whole.choices[0]?.text);
    expect(reasons.at(-1)).toBe("length");
    expect(reasons.slice(0, -1).every((r) => r === null)).toBe(true);
  });

  it("answers a chat through the model's chat template", async () => {
    const res = await client.chat.completions.create({
      model: "tiny-ref",
      messages,
      max_tokens: 6,
      temperature: 0,
      ...ignoreEos,
    });
    const ids = model.tokenizer.encode(model.tokenizer.applyChatTemplate(messages), {
      addSpecialTokens: false,
    });
    expect(res.choices[0]?.message).toEqual({ role: "assistant", content: await greedyText(ids, 6) });
    expect(res.object).toBe("chat.completion");
    expect(res.usage?.prompt_tokens).toBe(ids.length);
  });

  it("streams a chat: the role first, content deltas, the finish reason, a usage chunk", async () => {
    const whole = await client.chat.completions.create({
      model: "tiny-ref",
      messages,
      max_tokens: 6,
      temperature: 0,
      ...ignoreEos,
    });
    const stream = await client.chat.completions.create({
      model: "tiny-ref",
      messages,
      max_tokens: 6,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
      ...ignoreEos,
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(content).toBe(whole.choices[0]?.message.content);
    const finishes = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finishes.map((c) => c.choices[0]?.finish_reason)).toEqual(["length"]);
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toEqual(whole.usage);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it("stops a stream early when the client leaves the loop, and keeps serving", async () => {
    const stream = await client.chat.completions.create({
      model: "tiny-ref",
      messages,
      max_tokens: 500,
      stream: true,
      ...ignoreEos,
    });
    let seen = 0;
    for await (const _ of stream) if (++seen === 2) break;
    const again = await client.completions.create({
      model: "tiny-ref",
      prompt,
      max_tokens: 8,
      temperature: 0,
      ...ignoreEos,
    });
    expect(again.choices[0]?.text).toBe(await greedyText(model.tokenizer.encode(prompt), 8));
  });

  it("surfaces the server's errors as the client's typed errors", async () => {
    await expect(client.completions.create({ model: "other", prompt })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    await expect(
      client.completions.create({ model: "tiny-ref", prompt, temperature: -1 }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const stranger = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "wrong", maxRetries: 0 });
    await expect(stranger.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
