import { afterAll, describe, expect, it } from "vitest";
import type { GqaAttention } from "../blocks/attention/gqa-attention.js";
import { Engine } from "../engine.js";
import type { DecoderLayer } from "../model/model.js";
import type { DecoderConfig } from "../models/decoder.js";
import { type StepOutput, scoredToken } from "../request.js";
import { Rng } from "../tensor/random.js";
import { readCorpus } from "../tiny/corpus.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { generateTinyModel, tinyFilesToModel } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";
import type { HostTensor } from "./host-tensor.js";

const base = generateTinyModel(findTinySize("tiny") as TinySize, await readCorpus());
const engines: Engine[] = [];
afterAll(() => Promise.all(engines.map((e) => e.close())));

/** The tiny model as another family: a new model_type and extra per-layer tensors. */
function variant(
  modelType: string,
  extra: (layer: string) => [string, number][],
  configExtra = {},
): TinyModelFiles {
  const rng = new Rng(3);
  const tensors = new Map<string, HostTensor>(base.tensors);
  const layers = base.config.num_hidden_layers as number;
  for (let i = 0; i < layers; i++) {
    for (const [name, length] of extra(`model.layers.${i}`)) {
      tensors.set(name, {
        dtype: "F32",
        shape: [length],
        data: rng.fillNormal(new Float32Array(length), 0.5).map((v) => v + 1),
      });
    }
  }
  return { ...base, config: { ...base.config, model_type: modelType, ...configExtra }, tensors };
}

/** Greedy tokens and their logprobs. */
async function generate(files: TinyModelFiles): Promise<number[]> {
  const model = await tinyFilesToModel("t", files);
  const engine = new Engine(model, { threads: 1 });
  engines.push(engine);
  const prompt = model.tokenizer.encode("Salt tightens the gluten.");
  const out: StepOutput[] = [];
  for await (const o of engine.submit({
    promptTokenIds: prompt,
    maxTokens: 6,
    sampling: { temperature: 0 },
    logprobs: 0,
    ignoreEos: true,
  }))
    out.push(o);
  return out.flatMap((o) => (o.token ? [o.token.tokenId, scoredToken(o.token).logprob] : []));
}

describe("model families", () => {
  const llama = generate(base);

  it("qwen2: reads q/k/v biases and they change the output", async () => {
    const files = variant("qwen2", (p) => [
      [`${p}.self_attn.q_proj.bias`, 64],
      [`${p}.self_attn.k_proj.bias`, 32],
      [`${p}.self_attn.v_proj.bias`, 32],
    ]);
    const model = await tinyFilesToModel("q2", files);
    expect(((model.model.layers[0] as DecoderLayer).mixer as GqaAttention).weights.qBias).toHaveLength(64);
    expect(await generate(files)).not.toEqual(await llama);
  });

  it("qwen3: reads per-head q/k norms", async () => {
    const files = variant("qwen3", (p) => [
      [`${p}.self_attn.q_norm.weight`, 16],
      [`${p}.self_attn.k_norm.weight`, 16],
    ]);
    const layer = (await tinyFilesToModel("q3", files)).model.layers[1] as DecoderLayer;
    expect((layer.mixer as GqaAttention).weights.kNorm).toHaveLength(16);
    expect(await generate(files)).toHaveLength(12);
  });

  it("names the bias a qwen2 checkpoint lacks", async () => {
    await expect(
      tinyFilesToModel(
        "q2",
        variant("qwen2", () => []),
      ),
    ).rejects.toMatchObject({
      code: "MODEL_WEIGHT_MISSING",
      subject: "model.layers.0.self_attn.q_proj.bias",
    });
  });

  it("applies YaRN from rope_scaling, which changes positions past the first", async () => {
    const files = variant("llama", () => [], {
      rope_scaling: { rope_type: "yarn", factor: 4, original_max_position_embeddings: 512 },
    });
    expect(((await tinyFilesToModel("y", files)).config as DecoderConfig).ropeScaling).toMatchObject({
      factor: 4,
      betaFast: 32,
      betaSlow: 1,
    });
    expect(await generate(files)).not.toEqual(await llama);
  });
});
