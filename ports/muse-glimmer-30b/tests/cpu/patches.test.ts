import { afterAll, describe, expect, it } from "vitest";
import { Engine, kvCapacityRatio, type LoadedModel, modelOfFiles } from "../../../../src/engine/index.js";
import type { DecoderConfig } from "../../../../src/engine/models/decoder.js";
import type { FamilyPatch } from "../../../../src/engine/models/family-patch.js";
import {
  EXPERT_FIELDS,
  GLIMMER_PATCHES,
  museGlimmerFamily,
  ROUTER_NAME,
  SLIDING_PATTERN,
} from "../../../../src/engine/models/muse-glimmer.js";
import { bringupErrorOf, portReference } from "../../../../test/helpers/port-reference.js";

// Each of the port's three patches: what the tiny checkpoint does without it (an error, or a model
// that loads but attends and caches as the checkpoint does not), and that it passes with all three.
const ref = await portReference("muse-glimmer-30b");
const config = ref.referenceConfig;
const files = ref.referenceFiles();
const without = (patch: FamilyPatch) => museGlimmerFamily(GLIMMER_PATCHES.filter((p) => p !== patch));
const engines: Engine[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

/** The prompt logprob of each position of `prompt` after the first, greedy engine, full KV layout. */
async function promptLogprobs(model: LoadedModel, prompt: number[]): Promise<number[]> {
  const engine = new Engine(model, { threads: 1, kvLayout: "full", maxModelLen: 1024 });
  engines.push(engine);
  let out: number[] = [];
  for await (const o of engine.submit({ promptTokenIds: prompt, maxTokens: 0, promptLogprobs: 0 }))
    out = (o.promptLogprobs ?? []).slice(1).map((p) => p?.logprob ?? Number.NaN);
  return out;
}

describe("Muse Glimmer 30B: Qwen3-MoE with three patches", () => {
  it("writes its tiny checkpoint in Glimmer's own fields and tensor names", () => {
    expect(files.config).toMatchObject({
      model_type: "muse_glimmer",
      architectures: ["MuseGlimmerForCausalLM"],
      moe_num_experts: 8,
      moe_top_k: 2,
      sliding_window_pattern: 2,
    });
    for (const field of ["num_experts", "num_experts_per_tok", "layer_types"])
      expect(files.config).not.toHaveProperty(field);
    expect(files.tensors.has("model.layers.0.mlp.router.weight")).toBe(true);
    expect([...files.tensors.keys()].some((n) => n.endsWith(".mlp.gate.weight"))).toBe(false);
    expect(files.tensors.has("model.layers.0.self_attn.q_norm.weight")).toBe(true);
  });

  it("reads it as Qwen3-MoE: experts in every layer, q/k norms, every second layer full", () => {
    const c = ref.architecture.parseConfig(config, "port.yaml") as DecoderConfig;
    expect(c.modelType).toBe("muse_glimmer");
    expect(c.moe).toMatchObject({ numExperts: 8, topK: 2, intermediateSize: 32, normTopKProb: true });
    expect(c.layers.map((l) => [l.attention.kind, l.attention.window, l.mlp, l.attention.qkNorm])).toEqual([
      ["sliding", 128, "moe", true],
      ["full", 0, "moe", true],
      ["sliding", 128, "moe", true],
      ["full", 0, "moe", true],
    ]);
    expect(ref.referenceModel().model.vocabSize).toBe(files.config.vocab_size);
  });

  it(`${EXPERT_FIELDS.name}: without it the family builds dense MLPs and the load fails`, () => {
    expect(bringupErrorOf(() => modelOfFiles("glimmer", files, without(EXPERT_FIELDS)))).toMatchObject({
      code: "MODEL_WEIGHT_MISSING",
      message: expect.stringContaining("model.layers.0.mlp.gate_proj.weight"),
    });
  });

  it(`${ROUTER_NAME.name}: without it the load fails on Qwen3-MoE's router name`, () => {
    expect(bringupErrorOf(() => modelOfFiles("glimmer", files, without(ROUTER_NAME)))).toMatchObject({
      code: "MODEL_WEIGHT_MISSING",
      message: expect.stringContaining("model.layers.0.mlp.gate.weight"),
    });
  });

  it(`${SLIDING_PATTERN.name}: without it the model loads, but attends past the window and the KV layouts hold the same`, async () => {
    const plain = without(SLIDING_PATTERN);
    const wrong = plain.parseConfig(config, "port.yaml");
    const right = ref.architecture.parseConfig(config, "port.yaml");
    const ratio = (arch: typeof plain, c: typeof right) =>
      kvCapacityRatio(arch.states(c, new Map()), "window-sized", "full", 16, 4096);
    // The kv-capacity gate's expectation is the manifest's; without the patch the ratio is 1.
    const gate = /expected_ratio: ([\d.]+)/.exec(
      await import("node:fs/promises").then((fs) =>
        fs.readFile(new URL("../../port.yaml", import.meta.url), "utf8"),
      ),
    );
    const expected = Number(gate?.[1]);
    expect(Math.abs(ratio(ref.architecture, right) - expected) / expected).toBeLessThanOrEqual(0.02);
    expect(ratio(plain, wrong)).toBe(1);
    // The same weights: equal logprobs within the first window, different past it.
    const prompt = ref.referenceModel().tokenizer.encode(ref.corpus.slice(0, 4000)).slice(0, 300);
    expect(prompt).toHaveLength(300);
    const [patched, unpatched] = await Promise.all([
      promptLogprobs(ref.referenceModel(), prompt),
      promptLogprobs(modelOfFiles("glimmer", files, plain), prompt),
    ]);
    expect(unpatched.slice(0, 127)).toEqual(patched.slice(0, 127));
    expect(unpatched.slice(200).filter((lp, i) => lp !== patched[200 + i]).length).toBeGreaterThan(50);
  });

  it("refuses a field spelled both ways and a pattern beside layer_types, by name", () => {
    expect(
      bringupErrorOf(() => ref.architecture.parseConfig({ ...config, num_experts: 8 }, "config.json")),
    ).toMatchObject({
      code: "MODEL_CONFIG_INVALID",
      message: expect.stringMatching(/num_experts: is set beside moe_num_experts/),
    });
    expect(
      bringupErrorOf(() =>
        ref.architecture.parseConfig({ ...config, layer_types: ["full_attention"] }, "config.json"),
      ),
    ).toMatchObject({ message: expect.stringMatching(/layer_types: is set beside sliding_window_pattern/) });
    expect(
      bringupErrorOf(() =>
        ref.architecture.parseConfig({ ...config, model_type: "qwen3_moe" }, "config.json"),
      ),
    ).toMatchObject({ message: expect.stringMatching(/model_type: "qwen3_moe" is not "muse_glimmer"/) });
  });
});
