import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tinyFilesToModel } from "../tiny/generate.js";
import { goldenLogprobs } from "./golden-logprobs.js";
import { goldenFamilyModels, goldenPortModels } from "./golden-models.js";

// The llama family's were saved from the engine at 107851f, before models were built from blocks
// (MiMo's too, then in its port's tests); the other ports' and retrieval variants' from 63cd881,
// except GLM-5.3-Flash's two, saved again when its full-attention layers became latent attention,
// Inkling-Small's and Muse Spark Open's two each, saved when their families were added, and
// DeepSeek-V4.1-Flash's retrieval variant, saved when its copy circuit was added.
const saved = JSON.parse(await readFile(join(import.meta.dirname, "golden-logprobs.json"), "utf8"));
const family = await goldenFamilyModels();
const ports = await goldenPortModels();

describe("every tiny model keeps its bits", () => {
  it.each(Object.keys(family))("%s: prompt logprobs and greedy tokens equal the saved ones", async (name) => {
    const model = await tinyFilesToModel(name, family[name] as (typeof family)[string]);
    expect(await goldenLogprobs(model)).toEqual(saved[name]);
  });

  it.each(Object.keys(ports))("%s: prompt logprobs and greedy tokens equal the saved ones", async (name) => {
    const model = await tinyFilesToModel(name, ports[name] as (typeof ports)[string]);
    expect(await goldenLogprobs(model)).toEqual(saved[name]);
  });

  it("pins every model it has values for", () => {
    expect(Object.keys(saved).sort()).toEqual([...Object.keys(family), ...Object.keys(ports)].sort());
  });
});
