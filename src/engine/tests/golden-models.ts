import type { HostTensor } from "../loader/host-tensor.js";
import { Rng } from "../tensor/random.js";
import { readCorpus } from "../tiny/corpus.js";
import { generateTinyModel, type TinyModelFiles } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";

/**
 * The built-in family's models that golden-logprobs.json pins: llama, mixtral, and the tiny model
 * re-read as qwen2 (q/k/v biases), qwen3 (q/k norms) and mistral (every layer sliding over 8).
 */
export async function goldenFamilyModels(): Promise<Record<string, TinyModelFiles>> {
  const corpus = await readCorpus();
  const llama = generateTinyModel(findTinySize("tiny") as TinySize, corpus);
  const mixtral = generateTinyModel(findTinySize("tiny-moe") as TinySize, corpus);
  const layers = llama.config.num_hidden_layers as number;
  const variant = (
    modelType: string,
    extra: (layer: string) => [string, number][],
    configExtra: Record<string, unknown> = {},
  ): TinyModelFiles => {
    const rng = new Rng(3);
    const tensors = new Map<string, HostTensor>(llama.tensors);
    for (let i = 0; i < layers; i++) {
      for (const [name, length] of extra(`model.layers.${i}`)) {
        const data = rng.fillNormal(new Float32Array(length), 0.5).map((v) => v + 1);
        tensors.set(name, { dtype: "F32", shape: [length], data });
      }
    }
    return { ...llama, config: { ...llama.config, model_type: modelType, ...configExtra }, tensors };
  };
  return {
    llama,
    mixtral,
    qwen2: variant("qwen2", (p) => [
      [`${p}.self_attn.q_proj.bias`, 64],
      [`${p}.self_attn.k_proj.bias`, 32],
      [`${p}.self_attn.v_proj.bias`, 32],
    ]),
    qwen3: variant("qwen3", (p) => [
      [`${p}.self_attn.q_norm.weight`, 16],
      [`${p}.self_attn.k_norm.weight`, 16],
    ]),
    mistral: variant("mistral", () => [], { sliding_window: 8 }),
  };
}
