import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { type RunningServer, startServer } from "./index.js";

// Issue 27, items 3, 6 and 7: where this server's answers differed from vLLM's, each case with
// the vLLM file it follows.
const model = await createTinyModel(findTinySize("tiny") as TinySize);
const tok = model.tokenizer;
let server: RunningServer;
/** The engine on its own thread, where it runs ahead of the HTTP thread (as `bringup serve` runs it). */
let threaded: RunningServer;

beforeAll(async () => {
  [server, threaded] = await Promise.all([
    startServer({ model, port: 0, threads: 1 }),
    startServer({ tinySize: "tiny", port: 0, threads: 1 }),
  ]);
});
afterAll(async () => {
  await Promise.all([server.close(), threaded.close()]);
});

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field below.
type Json = any;

async function post(path: string, body: unknown, on = server): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${on.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const prompt = "The lamp on the breakwater";
const greedy = { prompt, temperature: 0, ignore_eos: true };

/** The greedy continuation's token ids and texts (each token's text in its place in the answer). */
async function greedyTokens(maxTokens: number): Promise<{ ids: number[]; texts: string[] }> {
  const { json } = await post("/v1/completions", {
    ...greedy,
    max_tokens: maxTokens,
    logprobs: 0,
    return_tokens_as_token_ids: true,
  });
  const ids = (json.choices[0].logprobs.tokens as string[]).map((t) => Number(t.slice("token_id:".length)));
  const texts = ids.map((_, i) => tok.decode(ids.slice(0, i + 1)).slice(tok.decode(ids.slice(0, i)).length));
  return { ids, texts };
}

describe("item 3: min_tokens with stop strings (vllm/v1/engine/detokenizer.py, update)", () => {
  it("matches a stop string only where it ends in a token after the first min_tokens", async () => {
    const { texts } = await greedyTokens(12);
    const full = texts.join("");
    const startOf = (k: number) => texts.slice(0, k).join("").length;
    // Token k's text as the stop string, where it occurs nowhere else in the answer.
    const k = texts.findIndex(
      (t, i) =>
        i >= 1 && t.length > 0 && full.indexOf(t) === startOf(i) && full.indexOf(t, startOf(i) + 1) < 0,
    );
    expect(k).toBeGreaterThan(0);
    const stop = texts[k] as string;
    // min_tokens k: the stop string ends in token k + 1, after the first min_tokens: it stops there.
    const before = await post("/v1/completions", { ...greedy, max_tokens: 12, stop: [stop], min_tokens: k });
    expect(before.json.choices[0]).toMatchObject({
      text: full.slice(0, startOf(k)),
      finish_reason: "stop",
      stop_reason: stop,
    });
    // min_tokens k + 1: that token is within min_tokens, so the match never counts (vLLM answers it all).
    const two = await post("/v1/completions", { ...greedy, max_tokens: 12, stop: [stop], min_tokens: k + 1 });
    expect(two.json.choices[0]).toMatchObject({ text: full, finish_reason: "length", stop_reason: null });
    expect(two.json.usage.completion_tokens).toBe(12);
  });
});

describe("item 6: refused as vLLM refuses", () => {
  it("a logit_bias id outside the vocabulary (vllm/v1/engine/processor.py, _validate_logit_bias)", async () => {
    const { status, json } = await post("/v1/completions", {
      ...greedy,
      max_tokens: 2,
      logit_bias: { "100000": 5 },
    });
    expect(status).toBe(400);
    expect(json.error).toMatchObject({
      param: "logit_bias",
      message: expect.stringMatching(/out of the vocabulary/),
    });
  });

  it("a seed outside int64 (vllm/entrypoints/openai/protocol.py, seed's ge/le _LONG_INFO)", async () => {
    for (const seed of ["18446744073709551615", "-9223372036854775809"]) {
      const body = `{"prompt": "hi", "max_tokens": 2, "temperature": 1, "seed": ${seed}}`;
      const res = await fetch(`${server.url}/v1/completions`, { method: "POST", body });
      const json: Json = await res.json();
      expect(res.status).toBe(400);
      expect(json.error.param).toBe("seed");
    }
    const top = `{"prompt": "hi", "max_tokens": 2, "temperature": 1, "seed": 9223372036854775807}`;
    expect((await fetch(`${server.url}/v1/completions`, { method: "POST", body: top })).status).toBe(200);
  });

  it("/tokenize answers token_strs when asked (vllm/entrypoints/openai/serving_tokenization.py)", async () => {
    const { json } = await post("/tokenize", { prompt, return_token_strs: true });
    expect(json.token_strs).toEqual((json.tokens as number[]).map((id) => tok.vocabToken(id)));
    expect(json.token_strs.length).toBe(json.count);
    expect((await post("/tokenize", { prompt })).json.token_strs).toBeNull();
  });
});

describe("item 7: smaller differences", () => {
  it("error.code is the HTTP status (vllm/entrypoints/openai/protocol.py, ErrorInfo.code: int)", async () => {
    const { status, json } = await post("/v1/completions", { ...greedy, max_tokens: -1 });
    expect(status).toBe(400);
    expect(json.error.code).toBe(400);
  });

  it("prompt_logprobs keep decoded_token's text with return_tokens_as_token_ids (vllm/entrypoints/openai/serving_completion.py)", async () => {
    const { json } = await post("/v1/completions", {
      ...greedy,
      max_tokens: 1,
      prompt_logprobs: 1,
      return_tokens_as_token_ids: true,
    });
    const positions = json.choices[0].prompt_logprobs as (Record<string, { decoded_token: string }> | null)[];
    for (const position of positions.slice(1))
      for (const [id, entry] of Object.entries(position ?? {}))
        expect(entry.decoded_token).toBe(tok.tokenText(Number(id)));
  });

  it("include_stop_str_in_output keeps a stop token's text (vllm/v1/engine/detokenizer.py, update)", async () => {
    const { ids, texts } = await greedyTokens(6);
    const stopAt = ids.findIndex((id, i) => i >= 2 && !tok.isSpecial(id) && (texts[i] as string).length > 0);
    const stopId = ids[stopAt] as number;
    const upTo = texts.slice(0, stopAt).join("");
    const without = await post("/v1/completions", { ...greedy, max_tokens: 6, stop_token_ids: [stopId] });
    const withIt = await post("/v1/completions", {
      ...greedy,
      max_tokens: 6,
      stop_token_ids: [stopId],
      include_stop_str_in_output: true,
    });
    expect(without.json.choices[0]).toMatchObject({ text: upTo, stop_reason: stopId });
    expect(withIt.json.choices[0]).toMatchObject({ text: upTo + texts[stopAt], stop_reason: stopId });
  });

  it("echo with logprobs fills prompt_logprobs (vllm/entrypoints/openai/protocol.py, CompletionRequest.to_sampling_params)", async () => {
    const { json } = await post("/v1/completions", { ...greedy, max_tokens: 1, echo: true, logprobs: 2 });
    const ids = tok.encode(prompt);
    const positions = json.choices[0].prompt_logprobs as (Record<string, unknown> | null)[];
    expect(positions).toHaveLength(ids.length);
    expect(positions[0]).toBeNull();
    for (const [i, position] of positions.slice(1).entries())
      expect(Object.keys(position ?? {})).toContain(String(ids[i + 1]));
  });

  it("chat echo fills prompt_logprobs with top_logprobs alternatives (vllm/entrypoints/openai/protocol.py, ChatCompletionRequest.to_sampling_params)", async () => {
    const messages = [{ role: "user", content: "Orla" }];
    const ids = (await post("/tokenize", { messages })).json.tokens as number[];
    for (const [extra, alternatives] of [
      [{}, 0],
      [{ logprobs: true, top_logprobs: 3 }, 3],
    ] as const) {
      const { json } = await post("/v1/chat/completions", { messages, max_tokens: 1, echo: true, ...extra });
      const positions = json.prompt_logprobs as (Record<string, { rank: number }> | null)[];
      expect(positions).toHaveLength(ids.length);
      expect(positions[0]).toBeNull();
      for (const [i, position] of positions.slice(1).entries()) {
        const own = String(ids[i + 1]);
        expect(Object.keys(position ?? {})).toContain(own);
        // The prompt's own token, plus the likeliest others unless it is one of them.
        const size = Object.keys(position ?? {}).length;
        expect(size).toBe(
          (position?.[own]?.rank ?? 0) <= alternatives ? Math.max(alternatives, 1) : alternatives + 1,
        );
      }
    }
    const plain = await post("/v1/chat/completions", { messages, max_tokens: 1 });
    expect(plain.json.prompt_logprobs).toBeNull();
  });

  it("chat top_logprobs list the sampled token first, then the likeliest others (vllm/entrypoints/openai/serving_chat.py, _get_top_logprobs)", async () => {
    const { json } = await post("/v1/chat/completions", {
      messages: [{ role: "user", content: "Orla" }],
      max_tokens: 24,
      temperature: 2,
      seed: 7,
      ignore_eos: true,
      logprobs: true,
      top_logprobs: 2,
    });
    const content = json.choices[0].logprobs.content as {
      token: string;
      logprob: number;
      top_logprobs: { token: string; logprob: number }[];
    }[];
    // At temperature 2 some sampled token is not the likeliest, which is where this differed.
    expect(content.some((c) => c.logprob < Math.max(...c.top_logprobs.map((t) => t.logprob)))).toBe(true);
    for (const c of content) {
      expect(c.top_logprobs).toHaveLength(2);
      expect(c.top_logprobs[0]).toMatchObject({ token: c.token, logprob: c.logprob });
    }
  });

  it("counts generation_tokens_total as usage does, none past a stop string (vllm/v1/metrics/loggers.py)", async () => {
    const read = async () => {
      const text = await (await fetch(`${threaded.url}/metrics`)).text();
      return (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m").exec(text)?.[1]);
    };
    const before = await read();
    const answers = await Promise.all(
      ["a", "e", "o", " ", "the"].map((stop, i) =>
        post(
          "/v1/completions",
          {
            prompt: `${prompt} ${i}`,
            max_tokens: 64,
            temperature: 1,
            seed: i,
            ignore_eos: true,
            stop: [stop],
          },
          threaded,
        ),
      ),
    );
    const usage = answers.reduce((sum, a) => sum + (a.json.usage.completion_tokens as number), 0);
    const after = await read();
    expect(after("vllm:generation_tokens_total") - before("vllm:generation_tokens_total")).toBe(usage);
  });

  it("exports iteration_tokens_total from the engine thread's steps (vllm/v1/metrics/loggers.py)", async () => {
    const read = async () => {
      const text = await (await fetch(`${threaded.url}/metrics`)).text();
      const value = (series: string) =>
        Number(
          new RegExp(
            `^vllm:iteration_tokens_total_${series}\\{model_name="tiny",engine="0"\\} (\\S+)$`,
            "m",
          ).exec(text)?.[1] ?? 0,
        );
      return { text, count: value("count"), sum: value("sum") };
    };
    // The steps' tokens travel with the engine thread's stats, after the answers they belong to:
    // read once two reads 50 ms apart agree (earlier tests' last steps may still be on the way).
    const settled = async () => {
      let last = await read();
      for (let i = 0; i < 40; i++) {
        await new Promise((r) => setTimeout(r, 50));
        const now = await read();
        if (now.count === last.count) return now;
        last = now;
      }
      return last;
    };
    const before = await settled();
    const { json } = await post("/v1/completions", { ...greedy, max_tokens: 3 }, threaded);
    const after = await settled();
    // One step gives the first token (the whole prompt and that token), then one token a step.
    expect(after.count - before.count).toBe(3);
    expect(after.sum - before.sum).toBe(json.usage.prompt_tokens + json.usage.completion_tokens);
    for (const le of [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, "+Inf"])
      expect(after.text).toContain(
        `vllm:iteration_tokens_total_bucket{le="${le}",model_name="tiny",engine="0"}`,
      );
  });

  it("exports vLLM's engine label and its request timing and parameter metrics (vllm/v1/metrics/loggers.py)", async () => {
    await post("/v1/completions", { ...greedy, max_tokens: 4, n: 2, temperature: 1, seed: 3 });
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/^vllm:generation_tokens_total\{model_name="tiny",engine="0"\} \d+$/m);
    for (const name of [
      "vllm:request_prefill_time_seconds",
      "vllm:request_decode_time_seconds",
      "vllm:request_inference_time_seconds",
      "vllm:request_time_per_output_token_seconds",
      "vllm:request_params_n",
      "vllm:request_params_max_tokens",
    ])
      expect(text).toMatch(new RegExp(`^${name}_count\\{[^}]*engine="0"[^}]*\\} [1-9]`, "m"));
    expect(text).toMatch(/^vllm:request_params_n_bucket\{le="2",model_name="tiny",engine="0"\} [1-9]/m);
  });
});
