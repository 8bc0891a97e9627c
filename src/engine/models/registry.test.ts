import { describe, expect, it } from "vitest";
import type { Architecture } from "../architecture.js";
import { modelOfFiles } from "../loader/build-model.js";
import { readCorpus } from "../tiny/corpus.js";
import { generateTinyModel, tinyFilesToModel } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";
import { type DecoderConfig, decoderStates } from "./decoder.js";
import { deepseekV3Architecture } from "./deepseek-v3.js";
import { buildLlama, llamaArchitecture, parseLlamaConfig } from "./llama.js";
import { mimoArchitecture } from "./mimo.js";
import { findArchitecture } from "./registry.js";

/** Model code that reads its own model_type as llama with every other layer sliding. */
const alternating: Architecture<DecoderConfig> = {
  parseConfig(json, source) {
    const base = parseLlamaConfig({ ...(json as object), model_type: "llama" }, source);
    const layers = base.layers.map((l, i) =>
      i % 2 === 0 ? { ...l, attention: { ...l.attention, kind: "sliding" as const, window: 4 } } : l,
    );
    return { ...base, modelType: "arch_test_alternating", layers };
  },
  build: buildLlama,
  states: decoderStates,
};

const files = generateTinyModel(findTinySize("tiny") as TinySize, await readCorpus());
const asAlternating = {
  ...files,
  config: { ...files.config, architectures: ["ArchTestForCausalLM"], model_type: "arch_test_alternating" },
};

describe("the registry of model families", () => {
  it("finds a family by config.json's first architecture, then by its model_type", async () => {
    expect(await findArchitecture({ architectures: ["MiMoV2FlashForCausalLM"] }, "c")).toBe(mimoArchitecture);
    expect(await findArchitecture({ architectures: ["Unknown"], model_type: "kimi_k2" }, "c")).toBe(
      deepseekV3Architecture,
    );
    expect(await findArchitecture({ model_type: "qwen3" }, "c")).toBe(llamaArchitecture);
  });

  it("refuses a config no family reads, naming its architecture, its model_type and the supported ones", async () => {
    await expect(tinyFilesToModel("alt", asAlternating)).rejects.toMatchObject({
      code: "MODEL_CONFIG_INVALID",
      message: expect.stringMatching(/"ArchTestForCausalLM" and model_type "arch_test_alternating".*mixtral/),
    });
  });

  it("builds with the model code given, its layers declaring their own state", () => {
    const model = modelOfFiles("alt", asAlternating, alternating);
    expect(model.architecture).toBe(alternating);
    expect(model.model.states().map((s) => s.kv?.kind)).toEqual([
      "sliding-window",
      "full",
      "sliding-window",
      "full",
    ]);
    // The same from the parsed config alone, without building the model.
    expect(alternating.states(model.config as DecoderConfig, new Map())).toEqual(model.model.states());
  });

  it("refuses a checkpoint with a tensor no layer reads, naming it", async () => {
    const tensors = new Map(files.tensors);
    tensors.set("model.layers.9.mlp.up_proj.weight", files.tensors.get("model.norm.weight") as never);
    await expect(tinyFilesToModel("extra", { ...files, tensors })).rejects.toMatchObject({
      code: "MODEL_WEIGHTS_MISMATCH",
      subject: "model.layers.9.mlp.up_proj.weight",
    });
  });

  it("refuses a checkpoint missing a tensor, and one whose shape does not match the config", async () => {
    const missing = new Map(files.tensors);
    missing.delete("model.layers.2.self_attn.k_proj.weight");
    await expect(tinyFilesToModel("missing", { ...files, tensors: missing })).rejects.toMatchObject({
      code: "MODEL_WEIGHT_MISSING",
      subject: "model.layers.2.self_attn.k_proj.weight",
    });
    const wrong = new Map(files.tensors);
    wrong.set(
      "model.layers.1.input_layernorm.weight",
      files.tensors.get("model.layers.1.self_attn.k_proj.weight") as never,
    );
    await expect(tinyFilesToModel("wrong", { ...files, tensors: wrong })).rejects.toMatchObject({
      code: "MODEL_WEIGHTS_MISMATCH",
      subject: "model.layers.1.input_layernorm.weight",
    });
  });
});
