import { describe, expect, it } from "vitest";
import { isBringupError } from "../../common/errors.js";
import { modelOfFiles } from "../loader/build-model.js";
import { goldenLogprobs } from "../tests/golden-logprobs.js";
import { readCorpus } from "../tiny/corpus.js";
import { generateTinyModel, tinyFilesToModel } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";
import { type FamilyPatch, patchFamily } from "./family-patch.js";
import { llamaArchitecture } from "./llama.js";

// Mixtral's tiny model stored as a port that calls its experts' block `moe` and its model type
// `renamed_mixtral`: one config patch (a field renamed) and one tensor patch.
const mixtral = generateTinyModel(findTinySize("tiny-moe") as TinySize, await readCorpus());
const rename: FamilyPatch = {
  name: "moe-block",
  tensorToFamily: (n) => n.replace(".moe.", ".block_sparse_moe."),
  tensorToCheckpoint: (n) => n.replace(".block_sparse_moe.", ".moe."),
};
const expertCount: FamilyPatch = {
  name: "expert-count",
  readConfig: ({ experts, ...rest }) => ({ ...rest, num_local_experts: experts }),
};
const family = patchFamily({
  modelType: "renamed_mixtral",
  architecture: "RenamedMixtralForCausalLM",
  base: llamaArchitecture,
  baseModelType: "mixtral",
  patches: [expertCount, rename],
});
const { num_local_experts: experts, ...config } = mixtral.config;
const patched = {
  ...mixtral,
  config: { ...config, model_type: "renamed_mixtral", experts },
  tensors: new Map([...mixtral.tensors].map(([n, t]) => [rename.tensorToCheckpoint?.(n) ?? n, t] as const)),
};

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (isBringupError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error("nothing was thrown");
}

describe("a port's patches over a family", () => {
  it("reads the port's checkpoint as the family reads its own, to the bit", async () => {
    const [own, port] = await Promise.all([
      goldenLogprobs(await tinyFilesToModel("mixtral", mixtral)),
      goldenLogprobs(modelOfFiles("renamed", patched, family)),
    ]);
    expect(port).toEqual(own);
  });

  it("still refuses a stored tensor no block reads, by its stored name", () => {
    const extra = new Map(patched.tensors);
    extra.set("model.layers.0.moe.extra.weight", patched.tensors.get("model.norm.weight") as never);
    expect(codeOf(() => modelOfFiles("renamed", { ...patched, tensors: extra }, family))).toMatch(
      /^MODEL_WEIGHTS_MISMATCH: .*model\.layers\.0\.moe\.extra\.weight/,
    );
  });

  it("writes the family's tiny model in the port's names and fields", () => {
    const tiny = family.tinyModel?.(patched.config, "the lamp on the breakwater ".repeat(200), { seed: 1 });
    expect(tiny?.config).toMatchObject({
      model_type: "renamed_mixtral",
      architectures: ["RenamedMixtralForCausalLM"],
    });
    expect(tiny?.config).not.toHaveProperty("num_local_experts");
    expect([...(tiny?.tensors.keys() ?? [])].filter((n) => n.includes("block_sparse_moe"))).toEqual([]);
    expect(tiny?.tensors.has("model.layers.0.moe.gate.weight")).toBe(true);
    expect(() => modelOfFiles("tiny", tiny as never, family)).not.toThrow();
  });

  it("refuses a config of another model type, naming the field", () => {
    expect(codeOf(() => family.parseConfig(mixtral.config, "config.json"))).toMatch(
      /MODEL_CONFIG_INVALID: config.json: model_type: "mixtral" is not "renamed_mixtral"/,
    );
  });
});
