import { describe, expect, it } from "vitest";
import type { GenerateRequest, StepOutput } from "./request.js";
import { collect, engineFactory } from "./tests/engines.js";
import { createTinyModel } from "./tiny/generate.js";
import { findTinySize, type TinySize } from "./tiny/sizes.js";

const model = await createTinyModel(findTinySize("tiny") as TinySize);
const engine = engineFactory(model, { threads: 2 });

const prompt = model.tokenizer.encode(
  "Tamsin counted the waves and walked in the pauses between them, then wrote the boats down",
);
const seeds = [7, 8, 9, 10];

function sampled(maxTokens = 10, extra: Partial<GenerateRequest> = {}): GenerateRequest {
  return {
    promptTokenIds: prompt,
    maxTokens,
    sampling: { temperature: 1.3 },
    logprobs: 2,
    ignoreEos: true,
    ...extra,
  };
}

/** Each seed's stream as a separate request, one after another. */
async function separately(e: ReturnType<typeof engine>, request: GenerateRequest): Promise<StepOutput[][]> {
  const out: StepOutput[][] = [];
  for (const seed of seeds)
    out.push(await collect(e.submit({ ...request, sampling: { ...request.sampling, seed } })));
  return out;
}

describe("Engine.submitShared", () => {
  it("prefills the prompt once and gives each seed the stream of a separate request", async () => {
    const e = engine();
    const request = sampled(10, { promptLogprobs: 2 });
    const expected = await separately(e, request);
    const before = e.stats().promptTokensTotal;
    expect(before).toBe(seeds.length * prompt.length);
    const shared = await Promise.all(e.submitShared(request, seeds).map(collect));
    expect(shared).toEqual(expected);
    expect(e.stats().promptTokensTotal - before).toBe(prompt.length);
    // The seeds differ, so the streams do too (the test would pass trivially otherwise).
    expect(new Set(shared.map((s) => s.map((o) => o.token?.tokenId).join())).size).toBe(seeds.length);
    expect(e.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0 });
  });

  it("holds the copies' blocks while they decode, and frees them at the end", async () => {
    const e = engine({ blockSize: 4 });
    const alone = e.submit(sampled(40));
    await alone.next();
    const one = e.stats().kvBlocksUsed;
    for await (const _ of alone);
    const streams = e.submitShared(sampled(40), seeds);
    await Promise.all(streams.map((s) => s.next()));
    expect(e.stats().kvBlocksUsed).toBeGreaterThanOrEqual(seeds.length * one);
    await Promise.all(streams.map(collect));
    expect(e.stats().kvBlocksUsed).toBe(0);
  });

  it("ends with max_tokens 0 after one prefill, each stream with the prompt logprobs", async () => {
    const e = engine();
    const outs = await Promise.all(
      e.submitShared({ promptTokenIds: prompt, maxTokens: 0, promptLogprobs: 1 }, [1, 2]).map(collect),
    );
    for (const o of outs) {
      expect(o).toHaveLength(1);
      expect(o[0]?.finishReason).toBe("length");
      expect(o[0]?.promptLogprobs).toHaveLength(prompt.length);
    }
    expect(e.stats()).toMatchObject({ promptTokensTotal: prompt.length, kvBlocksUsed: 0 });
  });

  it("recomputes the prompt for a copy that finds no free blocks, with the same results", async () => {
    const roomy = engine({ blockSize: 4 });
    const expected = await separately(roomy, sampled(12));
    // Room for about two sequences: the other two copies wait, then prefill on their own.
    const blocksPerSeq = Math.ceil((prompt.length + 12) / 4);
    const bytesPerBlock = model.model.layers.length * 2 * 2 * 16 * 4 * 4;
    const tight = engine({ blockSize: 4, kvCacheBytes: 2 * blocksPerSeq * bytesPerBlock });
    const shared = await Promise.all(tight.submitShared(sampled(12), seeds).map(collect));
    expect(shared).toEqual(expected);
    expect(tight.stats().promptTokensTotal).toBeGreaterThan(prompt.length);
    expect(tight.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0 });
  });

  it("aborts one stream alone, or all of them with the signal, before and after the fork", async () => {
    const e = engine();
    // One reader leaves after its second token: the others run to the end.
    const streams = e.submitShared(sampled(30), seeds);
    const [first, ...rest] = streams as [
      AsyncIterableIterator<StepOutput>,
      ...AsyncIterableIterator<StepOutput>[],
    ];
    const early = (async () => {
      for await (const o of first) if (o.numGeneratedTokens === 2) break;
    })();
    const others = await Promise.all(rest.map(collect));
    await early;
    for (const o of others)
      expect(o.at(-1)).toMatchObject({ finishReason: "length", numGeneratedTokens: 30 });
    expect(e.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0 });

    // Every reader leaves before the prompt is computed: the lead goes too.
    const gone = e.submitShared(sampled(30), seeds);
    for (const s of gone) await s.return?.();
    expect(e.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0 });

    const controller = new AbortController();
    const aborted = e.submitShared(sampled(200), seeds, controller.signal);
    const seen = aborted.map(() => 0);
    await Promise.all(
      aborted.map(async (s, i) => {
        for await (const o of s) {
          seen[i] = (seen[i] ?? 0) + 1;
          if (i === 0 && o.numGeneratedTokens === 3) controller.abort();
          if (o.finishReason !== null) expect(o.finishReason).toBe("abort");
        }
      }),
    );
    expect(Math.max(...seen)).toBeLessThan(10);
    expect(e.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0 });
  });

  it("admits a lead only with room for all its sequences next to those running", async () => {
    const e = engine({ maxNumSeqs: 4 });
    const other = e.submit(sampled(20));
    await other.next();
    const streams = e.submitShared(sampled(5), seeds);
    expect(e.stats()).toMatchObject({ running: 1, waiting: 1 });
    await Promise.all([collect(other), ...streams.map(collect)]);
    expect(e.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksUsed: 0 });
  });
});
