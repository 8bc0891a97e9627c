import { describe, expect, it } from "vitest";
import { parseLlamaConfig } from "./llama.js";

const llama = {
  model_type: "llama",
  vocab_size: 64,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 2,
};

describe("parseLlamaConfig: sliding-window layers", () => {
  it("reads layer_types and sliding_window", () => {
    const c = parseLlamaConfig({
      ...llama,
      layer_types: ["sliding_attention", "full_attention", "sliding_attention"],
      sliding_window: 128,
    });
    expect(c.layers.map((l) => [l.attention.kind, l.attention.window])).toEqual([
      ["sliding", 128],
      ["full", 0],
      ["sliding", 128],
    ]);
  });

  it("makes every Mistral layer sliding when sliding_window is set, none when it is null", () => {
    const sliding = parseLlamaConfig({ ...llama, model_type: "mistral", sliding_window: 4096 });
    expect(sliding.layers.every((l) => l.attention.kind === "sliding" && l.attention.window === 4096)).toBe(
      true,
    );
    const full = parseLlamaConfig({ ...llama, model_type: "mistral", sliding_window: null });
    expect(full.layers.every((l) => l.attention.kind === "full")).toBe(true);
    // Llama has no sliding window whatever the field says.
    expect(parseLlamaConfig({ ...llama, sliding_window: 8 }).layers[0]?.attention.kind).toBe("full");
  });

  it.each([
    [{ layer_types: ["full_attention"] }, /layer_types: has 1 entries for 3 layers/],
    [{ layer_types: ["full_attention", "chunked_attention", "full_attention"] }, /layer_types\[1\]/],
    [{ layer_types: ["sliding_attention", "full_attention", "full_attention"] }, /sliding_window is not set/],
    [{ use_sliding_window: true, sliding_window: 64 }, /list each layer's kind in layer_types/],
  ])("refuses %j with a message saying what to fix", (fields, message) => {
    expect(() => parseLlamaConfig({ ...llama, ...fields })).toThrow(message);
  });
});
