import { describe, expect, it } from "vitest";
import { type Architecture, findArchitecture } from "./architecture.js";
import { type DecoderConfig, decoderStates } from "./models/decoder.js";
import { buildLlama, llamaArchitecture, parseLlamaConfig } from "./models/llama.js";
import { readCorpus } from "./tiny/corpus.js";
import { generateTinyModel, tinyFilesToModel } from "./tiny/generate.js";
import { findTinySize, type TinySize } from "./tiny/sizes.js";

/** Model code that reads its own model_type as llama with every other layer sliding. */
const alternating: Architecture<DecoderConfig> = {
  modelTypes: ["arch_test_alternating"],
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
const asAlternating = { ...files, config: { ...files.config, model_type: "arch_test_alternating" } };

describe("architectures", () => {
  it("builds a model_type with the model code given for it, its layers declaring their own state", () => {
    const model = tinyFilesToModel("alt", asAlternating, [alternating]);
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

  it("refuses a model_type no given code reads, naming the supported ones", () => {
    expect(() => tinyFilesToModel("alt", asAlternating)).toThrow(
      expect.objectContaining({ code: "MODEL_CONFIG_INVALID", message: expect.stringMatching(/mixtral/) }),
    );
  });

  it("refuses two architectures for one model_type", () => {
    const other = { ...alternating };
    expect(() => findArchitecture("arch_test_alternating", [alternating, other], "config.json")).toThrow(
      expect.objectContaining({ code: "ARCHITECTURE_CONFLICT" }),
    );
    expect(findArchitecture("llama", [llamaArchitecture, llamaArchitecture], "c")).toBe(llamaArchitecture);
  });

  it("refuses a checkpoint with a tensor no layer reads, naming it", () => {
    const tensors = new Map(files.tensors);
    tensors.set("model.layers.9.mlp.up_proj.weight", files.tensors.get("model.norm.weight") as never);
    expect(() => tinyFilesToModel("extra", { ...files, tensors })).toThrow(
      expect.objectContaining({
        code: "MODEL_WEIGHTS_MISMATCH",
        subject: "model.layers.9.mlp.up_proj.weight",
      }),
    );
  });

  it("refuses a checkpoint missing a tensor, and one whose shape does not match the config", () => {
    const missing = new Map(files.tensors);
    missing.delete("model.layers.2.self_attn.k_proj.weight");
    expect(() => tinyFilesToModel("missing", { ...files, tensors: missing })).toThrow(
      expect.objectContaining({
        code: "MODEL_WEIGHT_MISSING",
        subject: "model.layers.2.self_attn.k_proj.weight",
      }),
    );
    const wrong = new Map(files.tensors);
    wrong.set(
      "model.layers.1.input_layernorm.weight",
      files.tensors.get("model.layers.1.self_attn.k_proj.weight") as never,
    );
    expect(() => tinyFilesToModel("wrong", { ...files, tensors: wrong })).toThrow(
      expect.objectContaining({
        code: "MODEL_WEIGHTS_MISMATCH",
        subject: "model.layers.1.input_layernorm.weight",
      }),
    );
  });
});
