import { modelOfFiles } from "../loader/build-model.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { llamaParameters, parseLlamaConfig } from "../models/llama.js";
import { findArchitecture } from "../models/registry.js";
import { readCorpus } from "./corpus.js";
import { type TinyModelFiles, tinyModelFiles, tinyTokenizer } from "./files.js";
import { type TinySize, tinyParameterCount } from "./sizes.js";
import { putParameters, type TinyDtype } from "./weights.js";

export type { TinyDtype };

export const TINY_DTYPES: readonly TinyDtype[] = ["f32", "bf16", "fp8", "mxfp4"];

export interface TinyOptions {
  /** Weight seed (default 0): the same size, seed and corpus give the same bytes. */
  readonly seed?: number;
  /**
   * Storage dtype of the decoder layers' matrices (default f32): bf16, fp8 (E4M3 with 128x128
   * `weight_scale_inv` tiles) or mxfp4 (`weight_blocks` + `weight_scales`). Embeddings, the LM head
   * and norms stay f32 (bf16 when dtype is bf16).
   */
  readonly dtype?: TinyDtype;
}

/** Builds a tiny model's files: a BPE trained on `corpus` and seeded random weights. */
export function generateTinyModel(size: TinySize, corpus: string, options: TinyOptions = {}): TinyModelFiles {
  const seed = options.seed ?? 0;
  const dtype = options.dtype ?? "f32";
  const tok = tinyTokenizer(corpus, size.bpeVocab, size.maxPositionEmbeddings);
  const { vocab, eos } = tok;
  const moe = size.experts;
  const config: Record<string, unknown> = {
    architectures: [moe ? "MixtralForCausalLM" : "LlamaForCausalLM"],
    model_type: moe ? "mixtral" : "llama",
    vocab_size: vocab,
    hidden_size: size.hiddenSize,
    intermediate_size: size.intermediateSize,
    num_hidden_layers: size.numLayers,
    num_attention_heads: size.numHeads,
    num_key_value_heads: size.numKvHeads,
    head_dim: size.headDim,
    hidden_act: "silu",
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    max_position_embeddings: size.maxPositionEmbeddings,
    tie_word_embeddings: false,
    attention_bias: false,
    bos_token_id: null,
    eos_token_id: eos,
    torch_dtype: dtype === "bf16" ? "bfloat16" : "float32",
    ...(dtype === "fp8"
      ? { quantization_config: { quant_method: "fp8", fmt: "e4m3", weight_block_size: [128, 128] } }
      : {}),
    ...(dtype === "mxfp4" ? { quantization_config: { quant_method: "mxfp4" } } : {}),
    ...(moe ? { num_local_experts: moe.numExperts, num_experts_per_tok: moe.topK } : {}),
    bringup_tiny: { size: size.name, seed },
  };
  // The llama family's tiny draws: every matrix at std 0.02; the decoder layers' matrices stored
  // in `dtype`, the embedding and head in f32 (bf16 when dtype is bf16).
  const tensors = new Map<string, HostTensor>();
  const { outer, layers } = llamaParameters(parseLlamaConfig(config, `tiny ${size.name} config`));
  putParameters(tensors, seed, outer, { std: 0.02, storage: dtype === "bf16" ? "bf16" : "f32" });
  putParameters(tensors, seed, layers, { std: 0.02, storage: dtype });
  return tinyModelFiles(config, tok, tensors, tinyParameterCount(size, vocab));
}

/** A tiny model built in memory from the shipped corpus, ready for an Engine. */
export async function createTinyModel(
  size: TinySize,
  options: TinyOptions & { readonly corpusDir?: string } = {},
): Promise<LoadedModel> {
  const files = generateTinyModel(size, await readCorpus(options.corpusDir), options);
  return tinyFilesToModel(size.name, files);
}

/** The model of in-memory tiny files, built by the family their config.json names (see loadModel). */
export async function tinyFilesToModel(name: string, files: TinyModelFiles): Promise<LoadedModel> {
  return modelOfFiles(name, files, await findArchitecture(files.config, `${name}: config.json`));
}
