import type { Architecture } from "../architecture.js";
import type { HostTensor } from "../loader/host-tensor.js";
import { type DecoderConfig, decoderStates } from "../models/decoder.js";
import { buildLlama, parseLlamaConfig } from "../models/llama.js";
import { Rng } from "../tensor/random.js";
import type { TinyModelFiles } from "../tiny/files.js";

const MODEL_TYPE = "test_llama_sinks";

/**
 * Test model code: the llama family with a learned sink logit per head on the layers its config's
 * `sink_layers` names ("sliding" or "all"), the attention features later ports need, composed
 * from the same blocks.
 */
export const sinksArchitecture: Architecture<DecoderConfig> = {
  parseConfig(json, source) {
    const c = parseLlamaConfig({ ...(json as object), model_type: "llama" }, source);
    const all = (json as { sink_layers?: unknown }).sink_layers === "all";
    const layers = c.layers.map((l) =>
      all || l.attention.kind === "sliding" ? { ...l, attention: { ...l.attention, sinks: true } } : l,
    );
    return { ...c, modelType: MODEL_TYPE, layers };
  },
  build: buildLlama,
  states: decoderStates,
};

/**
 * `files` (a tiny llama) re-read by sinksArchitecture: sink logits drawn from Rng(seed) on the
 * layers `sinkLayers` names, and with `vHeadDim` value heads narrower than the query/key heads
 * (fresh v_proj and o_proj).
 */
export function withSinks(
  files: TinyModelFiles,
  options: { readonly seed: number; readonly sinkLayers: "sliding" | "all"; readonly vHeadDim?: number },
): TinyModelFiles {
  const rng = new Rng(options.seed);
  const config = files.config as {
    hidden_size: number;
    num_attention_heads: number;
    num_key_value_heads: number;
    num_hidden_layers: number;
    layer_types?: string[];
  };
  const H = config.hidden_size;
  const tensors = new Map<string, HostTensor>(files.tensors);
  const put = (name: string, shape: number[], std: number) => {
    const data = rng.fillNormal(new Float32Array(shape.reduce((a, b) => a * b, 1)), std);
    tensors.set(name, { dtype: "F32", shape, data });
  };
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const p = `model.layers.${i}.self_attn`;
    const vHeadDim = options.vHeadDim;
    if (vHeadDim !== undefined) {
      put(`${p}.v_proj.weight`, [config.num_key_value_heads * vHeadDim, H], 0.05);
      put(`${p}.o_proj.weight`, [H, config.num_attention_heads * vHeadDim], 0.05);
    }
    const sliding = config.layer_types?.[i] === "sliding_attention";
    if (options.sinkLayers === "all" || sliding) put(`${p}.sinks`, [config.num_attention_heads], 1);
  }
  return {
    ...files,
    config: {
      ...files.config,
      model_type: MODEL_TYPE,
      sink_layers: options.sinkLayers,
      ...(options.vHeadDim !== undefined ? { v_head_dim: options.vHeadDim } : {}),
    },
    tensors,
  };
}
