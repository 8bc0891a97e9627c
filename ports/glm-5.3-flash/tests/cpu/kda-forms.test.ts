import { describe, expect, it } from "vitest";
import { Engine, type EngineOptions, readCorpus } from "../../../../src/engine/index.js";
import { promptAndGreedy } from "../../../../test/helpers/engine-runs.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("glm-5.3-flash");

const model = ref.referenceModel();
const corpus = await readCorpus();
const prompt = model.tokenizer.encode(corpus.slice(0, 2000)).slice(0, 300);
/** Prompt logprobs and six greedy tokens of the prompt under `switches`. */
const run = (switches: Record<string, string>, options: EngineOptions = {}) =>
  promptAndGreedy(model, prompt, { switches, ...options });

describe("KDA's prefill forms and kernels on the tiny reference model", () => {
  it("the fused recurrence gives the reference kernel's bits, prefill and decode", async () => {
    expect(await run({ kda_kernel: "fused" })).toEqual(await run({ kda_kernel: "reference" }));
  });

  it("the chunked prefill equals the recurrent form within rounding, and is a different computation", async () => {
    const recurrent = await run({ kda_prefill: "recurrent" });
    const chunked = await run({ kda_prefill: "chunked" });
    expect(chunked.tokens).toEqual(recurrent.tokens);
    const diffs = chunked.logprobs.map((lp, i) => Math.abs(lp - (recurrent.logprobs[i] as number)));
    // The chunked form rounds its state per chunk rather than per token (|Δ| per KDA output
    // measured under 2e-7 relative); through six KDA layers a logprob moves by far less than 1e-5.
    expect(Math.max(...diffs)).toBeLessThan(1e-5);
    expect(Math.max(...diffs)).toBeGreaterThan(0);
  });

  it("refuses a switch the model does not have, or a value it does not allow", () => {
    expect(() => new Engine(model, { threads: 1, switches: { kda_prefil: "chunked" } })).toThrow(
      expect.objectContaining({
        code: "ENGINE_OPTIONS_INVALID",
        message: expect.stringMatching(/kda_prefill/),
      }),
    );
    expect(() => new Engine(model, { threads: 1, switches: { kda_prefill: "parallel" } })).toThrow(
      expect.objectContaining({
        code: "ENGINE_OPTIONS_INVALID",
        message: expect.stringMatching(/recurrent, chunked/),
      }),
    );
  });
});
