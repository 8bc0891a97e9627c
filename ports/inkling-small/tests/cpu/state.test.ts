import { describe, expect, it } from "vitest";
import type { GenerateRequest, StepOutput } from "../../../../src/engine/index.js";
import { collect, engineFactory } from "../../../../src/engine/tests/engines.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("inkling-small");
const model = ref.referenceModel();
const engine = engineFactory(model, { threads: 2 });
const prompt = model.tokenizer.encode(
  "Tamsin counted the waves and walked in the pauses between them, then wrote the boats down",
);
const seeds = [7, 8, 9];

const sampled = (maxTokens: number): GenerateRequest => ({
  promptTokenIds: prompt,
  maxTokens,
  sampling: { temperature: 1.3 },
  logprobs: 2,
  ignoreEos: true,
});

async function separately(e: ReturnType<typeof engine>, request: GenerateRequest): Promise<StepOutput[][]> {
  const out: StepOutput[][] = [];
  for (const seed of seeds)
    out.push(await collect(e.submit({ ...request, sampling: { ...request.sampling, seed } })));
  return out;
}

describe("Inkling-Small's convolution tails", () => {
  it("are copied to each of n forks of one prefill: each stream equals a separate request", async () => {
    const e = engine({ blockSize: 4 });
    const expected = await separately(e, sampled(12));
    const forked = await Promise.all(e.submitShared(sampled(12), seeds).map(collect));
    expect(forked).toEqual(expected);
    expect(new Set(forked.map((s) => s.map((o) => o.token?.tokenId).join())).size).toBe(seeds.length);
    expect(e.stats()).toMatchObject({ running: 0, stateSlotsUsed: 0, kvBlocksUsed: 0 });
  });

  it("survive forks that find no room and are preempted, recomputed from the prompt", async () => {
    const roomy = engine({ blockSize: 4 });
    const expected = await separately(roomy, sampled(12));
    const blocksPerSeq = Math.ceil((prompt.length + 12) / 4);
    const bytesPerBlock = model.model.layers.length * 2 * 2 * 16 * 4 * 4;
    const tight = engine({ blockSize: 4, kvCacheBytes: 2 * blocksPerSeq * bytesPerBlock });
    const shared = await Promise.all(tight.submitShared(sampled(12), seeds).map(collect));
    expect(shared).toEqual(expected);
    expect(tight.stats().promptTokensTotal).toBeGreaterThan(prompt.length);
  });
});

describe("a context far past the longest trained bucket", () => {
  it("scores a 2000-token prompt, 31 times the last bucket's distance (64), with finite logprobs", async () => {
    const text = ref.corpus.slice(0, 20_000);
    const ids = model.tokenizer.encode(text).slice(0, 2000);
    expect(ids).toHaveLength(2000);
    const e = engine({ maxModelLen: 2048 });
    const [out] = await collect(e.submit({ promptTokenIds: ids, maxTokens: 0, promptLogprobs: 1 }));
    const logprobs = (out?.promptLogprobs ?? []).slice(1).map((p) => p?.logprob);
    expect(logprobs).toHaveLength(1999);
    expect(logprobs.every((l) => typeof l === "number" && Number.isFinite(l))).toBe(true);
  });
});
