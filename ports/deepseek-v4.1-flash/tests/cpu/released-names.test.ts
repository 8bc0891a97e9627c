import { afterAll, describe, expect, it } from "vitest";
import { Engine, type GenerateRequest, readCorpus, type StepOutput } from "../../../../src/engine/index.js";
import { parseV4Config } from "../../../../src/engine/models/deepseek-v4.js";
import { v4DeepseekTensors } from "../../../../src/engine/models/deepseek-v4-names.js";
import { collect } from "../../../../src/engine/tests/engines.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

// The tiny model in DeepSeek's released tensor names (per-expert FP4, `layers.N.attn.*`, `mtp.0.*`)
// served next to the same weights in transformers' names, past the window and the indexer's top-k.
const ref = await portReference("deepseek-v4.1-flash");
const files = ref.referenceFiles();
const transformers = ref.build("transformers-names", files);
const deepseek = ref.build("deepseek-names", {
  ...files,
  tensors: v4DeepseekTensors(files.tensors, parseV4Config(files.config, "tiny")),
});
const prompt = transformers.tokenizer.encode((await readCorpus()).slice(0, 4000)).slice(0, 150);
const engines: Engine[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

const served = (model: typeof transformers, speculativeTokens: number) => {
  const e = new Engine(model, { threads: 2, maxModelLen: 512, blockSize: 16, speculativeTokens });
  engines.push(e);
  return e;
};
const request: GenerateRequest = {
  promptTokenIds: prompt,
  maxTokens: 16,
  sampling: { temperature: 0 },
  logprobs: 0,
  ignoreEos: true,
};
const tokensOf = (outs: StepOutput[]) =>
  outs.flatMap((o) => (o.token ? [[o.token.tokenId, o.token.logprob]] : []));

describe("DeepSeek-V4.1-Flash's tiny model in DeepSeek's released tensor names", () => {
  it("serves the same greedy tokens and logprobs as in transformers' names, drafting off and on", async () => {
    for (const k of [0, 3]) {
      const expected = tokensOf(await collect(served(transformers, k).submit(request)));
      expect(tokensOf(await collect(served(deepseek, k).submit(request)))).toEqual(expected);
    }
  });
});
