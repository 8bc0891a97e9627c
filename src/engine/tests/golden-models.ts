import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import type { HostTensor } from "../loader/host-tensor.js";
import { findArchitecture } from "../models/registry.js";
import { Rng } from "../tensor/random.js";
import { readCorpus } from "../tiny/corpus.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { generateTinyModel } from "../tiny/generate.js";
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

/** Context length of the pinned retrieval variants: enough for the golden prompt, small to build. */
export const GOLDEN_RETRIEVAL_CONTEXT = 256;

const PORTS_DIR = join(import.meta.dirname, "../../../ports");

/**
 * Every port's models that golden-logprobs.json pins, made by the family the registry finds for
 * the port's reference config: `<port>` is the tiny reference model (seed 0) and
 * `<port>/retrieval` its retrieval variant, when the family makes one.
 */
export async function goldenPortModels(): Promise<Record<string, TinyModelFiles>> {
  const corpus = await readCorpus();
  const out: Record<string, TinyModelFiles> = {};
  for (const port of (await readdir(PORTS_DIR, { withFileTypes: true })).filter((e) => e.isDirectory())) {
    const manifest = parse(await readFile(join(PORTS_DIR, port.name, "port.yaml"), "utf8"));
    const config = manifest.reference?.config as Record<string, unknown> | undefined;
    if (config === undefined) continue;
    const family = await findArchitecture(config, `ports/${port.name}/port.yaml`);
    const options = { seed: 0, port: port.name };
    const tiny = family.tinyModel?.(config, corpus, options);
    if (tiny !== undefined) out[port.name] = tiny;
    const retrieval = family.retrievalModel?.(config, corpus, {
      ...options,
      maxPositionEmbeddings: GOLDEN_RETRIEVAL_CONTEXT,
    });
    if (retrieval !== undefined) out[`${port.name}/retrieval`] = retrieval;
  }
  return out;
}
