import { describe, expect, it } from "vitest";
import { kvCapacityRatio } from "./cache/capacity.js";
import type { EngineOptions } from "./engine.js";
import { modelOfFiles } from "./loader/build-model.js";
import type { GenerateRequest, StepOutput } from "./request.js";
import { collect, engineFactory } from "./tests/engines.js";
import { sinksArchitecture, withSinks } from "./tests/sinks-model.js";
import { readCorpus } from "./tiny/corpus.js";
import { generateTinyModel, tinyFilesToModel } from "./tiny/generate.js";
import { findTinySize, type TinySize } from "./tiny/sizes.js";

/**
 * The tiny llama with sliding-window layers read from config.json (layer_types, sliding_window 6)
 * around one global layer, and a learned sink logit per head on the sliding layers. With blocks of
 * 4 a sliding layer's ring is 4 blocks (6 + 8 - 1 positions), so the prompts below wrap it often.
 */
const files = generateTinyModel(findTinySize("tiny") as TinySize, await readCorpus(), { seed: 4 });
const kinds = ["sliding_attention", "full_attention", "sliding_attention", "sliding_attention"];
const slidingModel = modelOfFiles(
  "tiny-swa",
  withSinks(
    { ...files, config: { ...files.config, layer_types: kinds, sliding_window: 6 } },
    { seed: 9, sinkLayers: "sliding" },
  ),
  sinksArchitecture,
);
const globalModel = await tinyFilesToModel("tiny", files);

const engine = engineFactory(slidingModel, { threads: 2, blockSize: 4 });

const prompts = [
  "The lamp on the breakwater was lit at dusk, and the boats came in one by one past the harbour wall",
  "Tamsin counted the waves and walked in the pauses between them",
  "Orla",
  "Write down the boats, the names of the boats, and the hour each one came home.",
].map((p) => slidingModel.tokenizer.encode(p));

function greedy(promptTokenIds: number[], maxTokens = 24): GenerateRequest {
  return {
    promptTokenIds,
    maxTokens,
    sampling: { temperature: 0 },
    logprobs: 3,
    promptLogprobs: 3,
    ignoreEos: true,
  };
}

describe("Engine with sliding-window layers", () => {
  it("window-sized KV gives the same bits as full KV with a sliding mask, alone and batched", async () => {
    expect(prompts[0]?.length).toBeGreaterThan(20);
    const full = engine({ kvLayout: "full" });
    const ring = engine({ kvLayout: "window-sized" });
    expect(ring.limits.kvGroups.map((g) => [g.kind, g.numLayers, g.ringBlocks])).toEqual([
      ["sliding-window", 3, 4],
      ["full", 1, 0],
    ]);
    expect(full.limits.kvGroups.map((g) => [g.kind, g.numLayers])).toEqual([["sliding-mask", 4]]);
    const reference: StepOutput[][] = [];
    for (const p of prompts) reference.push(await collect(full.submit(greedy(p))));
    const alone: StepOutput[][] = [];
    for (const p of prompts) alone.push(await collect(ring.submit(greedy(p))));
    expect(alone).toEqual(reference);
    const together = await Promise.all(prompts.map((p) => collect(ring.submit(greedy(p)))));
    expect(together).toEqual(reference);
    expect(reference[0]?.at(-1)?.numGeneratedTokens).toBe(24);
    // The window matters: the same weights with every layer global give other numbers.
    const global = engine({}, globalModel);
    const unmasked = await collect(global.submit(greedy(prompts[0] as number[])));
    expect(unmasked.at(-1)?.token?.logprob).not.toBe(reference[0]?.at(-1)?.token?.logprob);
    for (const e of [full, ring]) expect(e.stats().kvBlocksUsed).toBe(0);
  });

  it("gives the same bits when a small step budget splits prompts into smaller chunks", async () => {
    const ring = engine({ kvLayout: "window-sized", maxNumBatchedTokens: 5 });
    const full = engine({ kvLayout: "full" });
    const req = greedy(prompts[0] as number[], 4);
    expect(await collect(ring.submit(req))).toEqual(await collect(full.submit(req)));
  });

  it("queues and preempts under a tight budget with the same greedy results, then holds no block", async () => {
    const roomy = engine({ kvLayout: "window-sized" });
    const expected = await Promise.all(prompts.map((p) => collect(roomy.submit(greedy(p, 30)))));
    // Room for two 80-token sequences: the others wait or are preempted and recomputed.
    const tight = engine({
      kvLayout: "window-sized",
      maxModelLen: 80,
      kvCacheBytes: 2 * (20 + 3 * 4) * 1024,
    });
    const got = await Promise.all(prompts.map((p) => collect(tight.submit(greedy(p, 30)))));
    expect(got).toEqual(expected);
    expect(tight.stats().preemptions).toBeGreaterThan(0);
    expect(tight.stats().kvBlocksUsed).toBe(0);
    expect(tight.stats().kvBlocksTotal).toBe(tight.limits.kvGroups.reduce((s, g) => s + g.blocks, 0));
  });

  it("shares a prefill between seeded sequences: ring blocks copied, the same bits as separate requests", async () => {
    const ring = engine({ kvLayout: "window-sized" });
    const request = { ...greedy(prompts[0] as number[], 12), sampling: { temperature: 1.5 } };
    const seeds = [3, 4, 5];
    const separate: StepOutput[][] = [];
    for (const seed of seeds)
      separate.push(await collect(ring.submit({ ...request, sampling: { ...request.sampling, seed } })));
    const before = ring.stats().promptTokensTotal;
    const shared = await Promise.all(ring.submitShared(request, seeds).map(collect));
    expect(shared).toEqual(separate);
    expect(ring.stats().promptTokensTotal - before).toBe(prompts[0]?.length);
    expect(ring.stats().kvBlocksUsed).toBe(0);
  });

  it("reports capacity in the ratio the formula gives, and a full-attention model's as blocks x block size", () => {
    const budget = 4 << 20;
    const maxModelLen = 2048;
    const ring = engine({ kvLayout: "window-sized", kvCacheBytes: budget, maxModelLen });
    const full = engine({ kvLayout: "full", kvCacheBytes: budget, maxModelLen });
    const measured = ring.stats().kvTokenCapacity / full.stats().kvTokenCapacity;
    const theory = kvCapacityRatio(slidingModel.model.states(), "window-sized", "full", 4, maxModelLen);
    // 4 layers of which 1 is global: 4 x 512 blocks over 512 + 3 x 4 per sequence.
    expect(theory).toBeCloseTo((4 * 512) / (512 + 12), 12);
    expect(Math.abs(measured / theory - 1)).toBeLessThan(0.002);
    expect(full.stats().kvTokenCapacity).toBe(full.limits.kvBlocks * 4);
    const global = engine({ kvCacheBytes: budget, maxModelLen: 1000 }, globalModel);
    expect(global.stats().kvTokenCapacity).toBe(global.limits.kvBlocks * 4);
    expect(ring.limits.kvTokenCapacity).toBe(ring.stats().kvTokenCapacity);
  });

  it("rejects a request its global layers cannot hold, naming them", () => {
    // A 4-token block takes 1 KiB in the global layer (keys and values of 2 heads of 16, in f32)
    // and 3 KiB in the ring group. Under one 64-token sequence's worth, the ring is kept whole (4
    // blocks) and the global layer gets the rest: 8 blocks, 32 tokens.
    const e = engine({ kvLayout: "window-sized", maxModelLen: 64, kvCacheBytes: 8 * 1024 + 4 * 3 * 1024 });
    expect(e.limits.kvGroups.map((g) => g.blocks)).toEqual([4, 8]);
    expect(() => e.submit({ promptTokenIds: [1, 2], maxTokens: 40 })).toThrow(
      expect.objectContaining({
        code: "KV_CAPACITY_EXCEEDED",
        message: expect.stringMatching(/full layers/),
      }),
    );
    expect(() => e.submit({ promptTokenIds: [1, 2], maxTokens: 30 })).not.toThrow();
  });

  it("refuses an unknown KV layout", () => {
    expect(() => engine({ kvLayout: "paged" as EngineOptions["kvLayout"] })).toThrow(
      expect.objectContaining({
        code: "ENGINE_OPTIONS_INVALID",
        message: expect.stringMatching(/window-sized, full/),
      }),
    );
  });
});
