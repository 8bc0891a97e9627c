import { describe, expect, it } from "vitest";
import { type Architecture, registerArchitecture, registeredArchitecture } from "./architecture.js";
import { type ModelConfig, parseHfConfig } from "./config.js";

const llama = {
  model_type: "llama",
  vocab_size: 64,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
};

/** Model code that reads its own model_type as llama with every other layer sliding. */
const alternating: Architecture = {
  modelTypes: ["arch_test_alternating"],
  parseConfig(json, source) {
    const base = parseHfConfig({ ...(json as object), model_type: "llama" }, source);
    const layers = base.layers.map((l, i) =>
      i % 2 === 0 ? { ...l, attention: { ...l.attention, kind: "sliding" as const, window: 4 } } : l,
    );
    return { ...base, modelType: "arch_test_alternating", layers } satisfies ModelConfig;
  },
};

describe("architecture registry", () => {
  it("parses a registered model_type with its model code", () => {
    registerArchitecture(alternating);
    registerArchitecture(alternating); // the same code again is harmless
    expect(registeredArchitecture("arch_test_alternating")).toBe(alternating);
    const config = parseHfConfig({ ...llama, model_type: "arch_test_alternating" });
    expect(config.modelType).toBe("arch_test_alternating");
    expect(config.layers.map((l) => l.attention.kind)).toEqual(["sliding", "full"]);
  });

  it("refuses a second architecture for a taken model_type", () => {
    registerArchitecture(alternating);
    const other: Architecture = { ...alternating, parseConfig: alternating.parseConfig };
    expect(() => registerArchitecture(other)).toThrow(
      expect.objectContaining({ code: "ARCHITECTURE_CONFLICT" }),
    );
  });

  it("lists registered model types when a config's type is unknown", () => {
    registerArchitecture(alternating);
    expect(() => parseHfConfig({ ...llama, model_type: "arch_test_unknown" })).toThrow(
      /arch_test_alternating/,
    );
  });
});
