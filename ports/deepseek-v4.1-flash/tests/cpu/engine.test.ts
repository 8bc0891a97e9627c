import { afterAll, describe, expect, it } from "vitest";
import {
  Engine,
  type EngineOptions,
  type GenerateRequest,
  readCorpus,
  type StepOutput,
} from "../../../../src/engine/index.js";
import { collect } from "../../../../src/engine/tests/engines.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

// Past the window (32) and with more compressed sparse rows (prompt / 4) than the indexer keeps
// (16), so the indexer chooses, and several heavily compressed rows (prompt / 32).
const ref = await portReference("deepseek-v4.1-flash");
const model = ref.referenceModel();
const corpus = await readCorpus();
const prompt = model.tokenizer.encode(corpus.slice(0, 4000)).slice(0, 203);
const engines: Engine[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

function engine(options: EngineOptions = {}): Engine {
  const e = new Engine(model, { threads: 2, maxModelLen: 512, blockSize: 16, ...options });
  engines.push(e);
  return e;
}

const tokensOf = (outs: StepOutput[]) =>
  outs.flatMap((o) => (o.token ? [[o.token.tokenId, o.token.logprob]] : []));
const sampled = (seed?: number): GenerateRequest => ({
  promptTokenIds: prompt,
  maxTokens: 24,
  sampling: { temperature: 1, ...(seed !== undefined ? { seed } : {}) },
  logprobs: 0,
  ignoreEos: true,
});

describe("DeepSeek-V4.1-Flash's tiny model on the engine, past the window and the indexer's top-k", () => {
  it("decoding token by token equals one forward of the same tokens, prefill chunked across row boundaries", async () => {
    const decoded = tokensOf(
      await collect(
        engine({ maxNumBatchedTokens: 13 }).submit({
          promptTokenIds: prompt,
          maxTokens: 24,
          sampling: { temperature: 0 },
          logprobs: 0,
          ignoreEos: true,
        }),
      ),
    );
    const all = [...prompt, ...decoded.map(([id]) => id as number)];
    const [scored] = await collect(engine().submit({ promptTokenIds: all, maxTokens: 0, promptLogprobs: 0 }));
    const tail = (scored?.promptLogprobs ?? []).slice(prompt.length).map((p) => [p?.tokenId, p?.logprob]);
    expect(tail).toEqual(decoded);
  });

  it("n forks of one prompt copy the window, compressed rows and indexer keys: each equals its request alone", async () => {
    const seeds = [3, 4, 5];
    const alone = await Promise.all(seeds.map((s) => collect(engine().submit(sampled(s)))));
    const forked = await Promise.all(engine().submitShared(sampled(), seeds).map(collect));
    expect(forked.map(tokensOf)).toEqual(alone.map(tokensOf));
    expect(new Set(forked.map((s) => JSON.stringify(tokensOf(s)))).size).toBe(seeds.length);
  });

  it("dense attention of the same weights gives other logits (the sparse form is in use)", async () => {
    const run = async (v4_attention: string) =>
      (
        await collect(
          engine({ switches: { v4_attention } }).submit({
            promptTokenIds: prompt,
            maxTokens: 0,
            promptLogprobs: 0,
          }),
        )
      )[0]?.promptLogprobs?.map((p) => p?.logprob);
    const [sparse, dense] = [await run("sparse"), await run("dense")];
    // Equal until the first compressed row closes (at position 3, logprob 4), apart after it.
    expect(sparse?.slice(0, 4)).toEqual(dense?.slice(0, 4));
    expect(sparse?.slice(40)).not.toEqual(dense?.slice(40));
  });

  it("replays decode past the window bit for bit, and with MTP drafting verifying beside planned steps", async () => {
    // Eight streams of staggered lengths: the batch shrinks as they end, each size planned once.
    const requests = Array.from({ length: 8 }, (_, i) => ({ ...sampled(20 + i), maxTokens: 8 + 3 * i }));
    const run = async (options: EngineOptions) => {
      const e = engine(options);
      const outs = await Promise.all(requests.map((r) => collect(e.submit(r))));
      return { tokens: outs.map(tokensOf), counts: e.replayCounts };
    };
    const off = await run({ switches: { replay: "off" } });
    const on = await run({ switches: { replay: "on" } });
    expect(on.tokens).toEqual(off.tokens);
    expect(on.counts.replayedSteps).toBeGreaterThan(0);
    const greedy = requests.map((r) => ({ ...r, sampling: { temperature: 0 } }));
    const plain = await Promise.all(greedy.map((r) => collect(engine().submit(r))));
    const drafted = engine({ speculativeTokens: 2, switches: { replay: "on" } });
    const got = await Promise.all(greedy.map((r) => collect(drafted.submit(r))));
    expect(got.map(tokensOf)).toEqual(plain.map(tokensOf));
  });
});
