import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tinyFilesToModel } from "../tiny/generate.js";
import { goldenLogprobs } from "./golden-logprobs.js";
import { goldenFamilyModels } from "./golden-models.js";

// Saved from the engine at 107851f, before models were built from blocks.
const saved = JSON.parse(await readFile(join(import.meta.dirname, "golden-logprobs.json"), "utf8"));
const models = await goldenFamilyModels();

describe("the llama family keeps its bits", () => {
  it.each(Object.keys(models))("%s: prompt logprobs and greedy tokens equal the saved ones", async (name) => {
    const model = tinyFilesToModel(name, models[name] as (typeof models)[string]);
    expect(await goldenLogprobs(model)).toEqual(saved[name]);
  });
});
