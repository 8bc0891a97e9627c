import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCatalog } from "../catalog/index.js";
import {
  Engine,
  type GenerateRequest,
  readCorpus,
  type StepOutput,
  tinyFilesToModel,
} from "../engine/index.js";
import { PORT_MODELS } from "./port-models.js";

// Every port's tiny reference model (paged KV of every kind, KDA's state slots, latent attention):
// sequences sharing one prefill equal separate requests with their seeds, and hold nothing after.
const catalog = await loadCatalog(join(import.meta.dirname, "../.."));
const corpus = await readCorpus();

async function collect(stream: AsyncIterable<StepOutput>): Promise<StepOutput[]> {
  const out: StepOutput[] = [];
  for await (const o of stream) out.push(o);
  return out;
}

describe("a prefill shared between sequences, on every port's model", () => {
  it.each([...PORT_MODELS.keys()])("%s", async (id) => {
    const portModel = PORT_MODELS.get(id);
    const config = catalog.ports.find((p) => p.id === id)?.manifest.reference?.config;
    if (portModel === undefined || config === undefined) throw new Error(`${id} has no tiny model`);
    const model = tinyFilesToModel(id, portModel.tinyModel(config, corpus, { seed: 0 }), [
      portModel.architecture,
    ]);
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
