import { afterAll, describe, expect, it } from "vitest";
import { Engine, type PromptLogprobs, readCorpus } from "../../../../src/engine/index.js";
import { portModel } from "../../model.js";
import { referenceConfig, referenceModel } from "./reference.js";

const config = await referenceConfig();
const model = await referenceModel();
const corpus = await readCorpus();
const prompt = model.tokenizer.encode(corpus.slice(0, 2000)).slice(0, 160);
const engines: Engine[] = [];
afterAll(() => Promise.all(engines.map((e) => e.close())));

const BLOCK = 16;
/** Bytes one block of 16 tokens takes in the four layers with per-head K/V: 4 x 4 x (16 + 8 + 16) floats a token. */
const PER_HEAD_BLOCK_BYTES = BLOCK * 4 * 4 * 40 * 4;

function engine(switches: Record<string, string>, kvCacheBytes?: number): Engine {
  const e = new Engine(model, {
    threads: 2,
    maxModelLen: 512,
    blockSize: BLOCK,
    switches,
    ...(kvCacheBytes !== undefined ? { kvCacheBytes } : {}),
  });
  engines.push(e);
  return e;
}

/** Prompt logprobs and six greedy tokens under `switches`. */
async function run(switches: Record<string, string>) {
  let logprobs: PromptLogprobs = [];
  const tokens: number[] = [];
  for await (const out of engine(switches).submit({
    promptTokenIds: prompt,
    maxTokens: 6,
    promptLogprobs: 0,
    sampling: { temperature: 0 },
    ignoreEos: true,
  })) {
    if (out.promptLogprobs) logprobs = out.promptLogprobs;
    if (out.token) tokens.push(out.token.tokenId);
  }
  return { logprobs: logprobs.slice(1).map((p) => p?.logprob as number), tokens };
}

describe("Kimi-K2.7-Code's latent cache against per-head K/V", () => {
  it("states the theory from the config: 4 heads x (16 + 8 + 16) over 32 + 8 values per token and layer", () => {
    const latent = portModel.kvValuesPerToken?.(config, {});
    const perHead = portModel.kvValuesPerToken?.(config, { mla_cache: "per-head" });
    expect(latent).toBe(4 * (32 + 8));
    expect(perHead).toBe(4 * 4 * (16 + 8 + 16));
    expect(portModel.kvValuesPerToken?.(config, { mla_cache: "latent" })).toBe(latent);
  });

  it("holds the theory's ratio of tokens in one KV budget", () => {
    const kvCacheBytes = 8 * PER_HEAD_BLOCK_BYTES;
    const latent = engine({}, kvCacheBytes).limits;
    const perHead = engine({ mla_cache: "per-head" }, kvCacheBytes).limits;
    expect(perHead.kvTokenCapacity).toBe(8 * BLOCK);
    const theory =
      (portModel.kvValuesPerToken?.(config, { mla_cache: "per-head" }) as number) /
      (portModel.kvValuesPerToken?.(config, {}) as number);
    expect(latent.kvTokenCapacity / perHead.kvTokenCapacity).toBe(theory);
  });

  it("per-head K/V gives the expanded form's logprobs bit for bit, and the absorbed form's within rounding", async () => {
    const perHead = await run({ mla_cache: "per-head" });
    expect(perHead).toEqual(await run({ mla_form: "expanded" }));
    const absorbed = await run({});
    expect(perHead.tokens).toEqual(absorbed.tokens);
    // The same sums over 32 latent features in another order (see latent-forms.test.ts): 1e-4 bounds
    // f32 rounding through four layers and the log-softmax, far below a logprob that would matter.
    const diff = Math.max(...perHead.logprobs.map((x, i) => Math.abs(x - (absorbed.logprobs[i] as number))));
    expect(diff).toBeLessThan(1e-4);
    expect(diff).toBeGreaterThan(0);
  });
});
