import { describe, expect, it } from "vitest";
import { portReference, referencePortIds } from "../../test/helpers/port-reference.js";
import { Engine, type GenerateRequest, type StepOutput } from "../engine/index.js";
import { collect } from "../engine/tests/engines.js";

// Every port's tiny reference model (paged KV of every kind, KDA's state slots, latent attention):
// sequences sharing one prefill equal separate requests with their seeds, and hold nothing after.

const portIds = await referencePortIds();

describe("a prefill shared between sequences, on every port's model", () => {
  it.each(portIds)("%s", async (id) => {
    const model = (await portReference(id)).referenceModel();
    const engine = new Engine(model, { threads: 1, blockSize: 4, maxModelLen: 128 });
    try {
      const promptTokenIds = model.tokenizer.encode(
        "The lamp on the breakwater was lit at dusk, and the boats came in",
      );
      const request: GenerateRequest = {
        promptTokenIds,
        maxTokens: 8,
        sampling: { temperature: 1.3 },
        logprobs: 1,
        ignoreEos: true,
      };
      const seeds = [11, 12, 13];
      const separate: StepOutput[][] = [];
      for (const seed of seeds)
        separate.push(await collect(engine.submit({ ...request, sampling: { ...request.sampling, seed } })));
      const before = engine.stats().promptTokensTotal;
      const shared = await Promise.all(engine.submitShared(request, seeds).map(collect));
      expect(shared).toEqual(separate);
      expect(engine.stats().promptTokensTotal - before).toBe(promptTokenIds.length);
      expect(engine.stats()).toMatchObject({ kvBlocksUsed: 0, stateSlotsUsed: 0 });
    } finally {
      await engine.close();
    }
  });
});
