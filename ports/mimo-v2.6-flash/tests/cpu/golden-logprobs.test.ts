import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readCorpus } from "../../../../src/engine/index.js";
import { goldenLogprobs } from "../../../../src/engine/tests/golden-logprobs.js";
import { portModel } from "../../model.js";
import { loadFiles, referenceConfig } from "./reference.js";

// Saved from the engine at 107851f, before MiMo's model code composed engine blocks.
const saved = JSON.parse(await readFile(join(import.meta.dirname, "golden-logprobs.json"), "utf8"));
const corpus = await readCorpus();

describe("MiMo keeps its bits", () => {
  it("the tiny reference model's prompt logprobs and greedy tokens equal the saved ones", async () => {
    const files = portModel.tinyModel(await referenceConfig(), corpus, { seed: 0 });
    expect(await goldenLogprobs(await loadFiles(files, "tiny"))).toEqual(saved.tiny);
  });

  it("so do the retrieval variant's", async () => {
    const retrieval = portModel.retrievalModel?.(corpus, { maxPositionEmbeddings: 256 });
    expect(retrieval).toBeDefined();
    const model = await loadFiles(retrieval as NonNullable<typeof retrieval>, "retrieval");
    expect(await goldenLogprobs(model)).toEqual(saved.retrieval);
  });
});
