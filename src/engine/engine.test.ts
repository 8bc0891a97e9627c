import { describe, expect, it } from "vitest";
import type { GenerateRequest, StepOutput } from "./request.js";
import { collect, engineFactory } from "./tests/engines.js";
import { createTinyModel } from "./tiny/generate.js";
import { findTinySize, type TinySize } from "./tiny/sizes.js";

const model = await createTinyModel(findTinySize("tiny") as TinySize);
const engine = engineFactory(model, { threads: 2 });

const prompts = [
  "The lamp on the breakwater",
  "Tamsin counted the waves and walked in the pauses between them",
  "Orla",
  "Write down the boats.",
].map((p) => model.tokenizer.encode(p));

function greedy(promptTokenIds: number[], maxTokens = 12): GenerateRequest {
  return { promptTokenIds, maxTokens, sampling: { temperature: 0 }, logprobs: 2, ignoreEos: true };
}

describe("Engine", () => {
  it.each([true, false])(
    "decodes a batch of requests exactly as it decodes each one alone (simd %s)",
    async (simd) => {
      const e = engine({ simd });
      const alone: StepOutput[][] = [];
      for (const p of prompts) alone.push(await collect(e.submit(greedy(p))));
      const together = await Promise.all(prompts.map((p) => collect(e.submit(greedy(p)))));
      expect(together).toEqual(alone);
      expect(alone[0]?.length).toBe(12);
      expect(alone[0]?.at(-1)?.finishReason).toBe("length");
      expect(e.stats().kvBlocksUsed).toBe(0);
    },
  );

  it("queues and preempts when the KV cache is small, with the same greedy results", async () => {
    const roomy = engine();
    const expected = await Promise.all(prompts.map((p) => collect(roomy.submit(greedy(p, 20)))));
    // Room for about two sequences of ~30 tokens: the rest must wait or be preempted and recomputed.
    const bytesPerToken = model.model.layers.length * 2 * 2 * 16 * 4;
    const tight = engine({ blockSize: 4, kvCacheBytes: 16 * 4 * bytesPerToken });
    const got = await Promise.all(prompts.map((p) => collect(tight.submit(greedy(p, 20)))));
    expect(got.map((o) => o.map((s) => s.token?.tokenId))).toEqual(
      expected.map((o) => o.map((s) => s.token?.tokenId)),
    );
    expect(tight.stats().kvBlocksUsed).toBe(0);
    expect(tight.stats().kvBlocksTotal).toBe(16);
    expect(tight.stats().preemptions).toBeGreaterThan(0);
  });

  it("scores a prompt with max_tokens 0: vLLM-style prompt logprobs, first position null", async () => {
    const e = engine();
    const prompt = prompts[1] as number[];
    const outs = await collect(e.submit({ promptTokenIds: prompt, maxTokens: 0, promptLogprobs: 3 }));
    expect(outs).toHaveLength(1);
    const [only] = outs;
    expect(only?.finishReason).toBe("length");
    expect(only?.token).toBeUndefined();
    const lp = only?.promptLogprobs ?? [];
    expect(lp).toHaveLength(prompt.length);
    expect(lp[0]).toBeNull();
    for (let i = 1; i < prompt.length; i++) {
      const entry = lp[i];
      expect(entry?.tokenId).toBe(prompt[i]);
      expect(entry?.logprob).toBeLessThanOrEqual(0);
      expect(entry?.top).toHaveLength(3);
    }
  });

  it("gives the same prompt logprobs when the prefill is split into chunks", async () => {
    const whole = engine();
    const chunked = engine({ maxNumBatchedTokens: 3 });
    const req = {
      promptTokenIds: prompts[1] as number[],
      maxTokens: 2,
      promptLogprobs: 1,
      sampling: { temperature: 0 },
    };
    expect(await collect(chunked.submit(req))).toEqual(await collect(whole.submit(req)));
  });

  it("reports each step's tokens as vLLM's iteration_tokens_total counts them (vllm/v1/metrics/stats.py)", async () => {
    // A prompt prefilled in chunks of 4 counts whole, once, in the step that gives its first token;
    // steps that only run a chunk report nothing; then each step counts the tokens it generated.
    const e = engine({ maxNumBatchedTokens: 4 });
    const prompt = prompts[1] as number[];
    expect(prompt.length).toBeGreaterThan(8);
    const steps: number[] = [];
    const stop = e.onStep((tokens) => steps.push(tokens));
    await collect(e.submit(greedy(prompt, 3)));
    expect(steps).toEqual([prompt.length + 1, 1, 1]);
    // Two sequences sharing one prefill: each counts the prompt, as vLLM's two child requests do.
    steps.length = 0;
    await Promise.all(e.submitShared(greedy(prompt, 2), [1, 2]).map(collect));
    expect(steps).toEqual([2 * (prompt.length + 1), 2]);
    stop();
    await collect(e.submit(greedy(prompt, 2)));
    expect(steps).toHaveLength(2);
  });

  it("frees an aborted request's blocks at once and ends its stream with abort", async () => {
    const e = engine();
    const controller = new AbortController();
    const stream = e.submit(greedy(prompts[1] as number[], 200), controller.signal);
    const seen: StepOutput[] = [];
    for await (const o of stream) {
      seen.push(o);
      if (seen.length === 3) {
        controller.abort();
        expect(e.stats().kvBlocksUsed).toBe(0);
      }
    }
    expect(seen.at(-1)?.finishReason).toBe("abort");
    expect(seen).toHaveLength(4);
    expect(e.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0 });
  });

  it("aborts a request whose reader stops reading", async () => {
    const e = engine();
    for await (const o of e.submit(greedy(prompts[0] as number[], 100))) {
      if (o.numGeneratedTokens === 2) break;
    }
    expect(e.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0 });
  });

  it("stops at an end-of-sequence token unless told to ignore it", async () => {
    const e = engine();
    const first = await collect(e.submit(greedy(prompts[0] as number[], 3)));
    const stopId = first[1]?.token?.tokenId as number;
    const outs = await collect(
      e.submit({ ...greedy(prompts[0] as number[], 3), stopTokenIds: [stopId], ignoreEos: false }),
    );
    expect(outs.at(-1)?.finishReason).toBe("stop");
    expect(outs.at(-1)?.token?.tokenId).toBe(stopId);
  });

  it("samples reproducibly with a seed", async () => {
    const e = engine();
    const req: GenerateRequest = {
      promptTokenIds: prompts[0] as number[],
      maxTokens: 10,
      sampling: { temperature: 1.2, topP: 0.9, topK: 50, seed: 42 },
    };
    const a = await collect(e.submit(req));
    const b = await collect(e.submit(req));
    expect(a.map((o) => o.token?.tokenId)).toEqual(b.map((o) => o.token?.tokenId));
  });
});
