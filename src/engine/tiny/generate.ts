import { encodeMxfp4, float32ToBf16, floatToFp8Tile128 } from "../../formats/index.js";
import { modelOfFiles } from "../loader/build-model.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { findArchitecture } from "../models/registry.js";
import { Rng } from "../tensor/random.js";
import { readCorpus } from "./corpus.js";
import { type TinyModelFiles, tinyModelFiles, tinyTokenizer } from "./files.js";
import { type TinySize, tinyParameterCount } from "./sizes.js";
import { filled, tensorSeed } from "./weights.js";

export type TinyDtype = "f32" | "bf16" | "fp8" | "mxfp4";

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
  const tensors = new Map<string, HostTensor>();
  const H = size.hiddenSize;
  const matrix = (name: string, rows: number, cols: number, quantize = true) => {
    const values = new Rng(tensorSeed(seed, name)).fillNormal(new Float32Array(rows * cols), 0.02);
    const shape = [rows, cols];
    if (dtype === "bf16") tensors.set(name, { dtype: "BF16", shape, data: float32ToBf16(values) });
    else if (!quantize || dtype === "f32") tensors.set(name, { dtype: "F32", shape, data: values });
    else if (dtype === "fp8") {
      const { elements, scaleInv } = floatToFp8Tile128(values, rows, cols);
      tensors.set(name, { dtype: "F8_E4M3", shape, data: elements });
      tensors.set(`${name}_scale_inv`, {
        dtype: "F32",
        shape: [Math.ceil(rows / 128), Math.ceil(cols / 128)],
        data: scaleInv,
      });
    } else {
      const { blocks, scales } = encodeMxfp4(values, name);
      tensors.set(`${name}_blocks`, { dtype: "U8", shape: [rows, cols / 32, 16], data: blocks });
      tensors.set(`${name}_scales`, { dtype: "U8", shape: [rows, cols / 32], data: scales });
    }
  };
  const ones = (name: string, n: number) =>
    tensors.set(name, { dtype: "F32", shape: [n], data: filled(n, 1) });
  matrix("model.embed_tokens.weight", vocab, H, false);
  for (let i = 0; i < size.numLayers; i++) {
    const p = `model.layers.${i}`;
    ones(`${p}.input_layernorm.weight`, H);
    ones(`${p}.post_attention_layernorm.weight`, H);
    matrix(`${p}.self_attn.q_proj.weight`, size.numHeads * size.headDim, H);
    matrix(`${p}.self_attn.k_proj.weight`, size.numKvHeads * size.headDim, H);
    matrix(`${p}.self_attn.v_proj.weight`, size.numKvHeads * size.headDim, H);
    matrix(`${p}.self_attn.o_proj.weight`, H, size.numHeads * size.headDim);
    if (moe) {
      matrix(`${p}.block_sparse_moe.gate.weight`, moe.numExperts, H);
      for (let e = 0; e < moe.numExperts; e++) {
        const x = `${p}.block_sparse_moe.experts.${e}`;
        matrix(`${x}.w1.weight`, moe.intermediateSize, H);
        matrix(`${x}.w3.weight`, moe.intermediateSize, H);
        matrix(`${x}.w2.weight`, H, moe.intermediateSize);
      }
    } else {
      matrix(`${p}.mlp.gate_proj.weight`, size.intermediateSize, H);
      matrix(`${p}.mlp.up_proj.weight`, size.intermediateSize, H);
      matrix(`${p}.mlp.down_proj.weight`, H, size.intermediateSize);
    }
  }
  ones("model.norm.weight", H);
  matrix("lm_head.weight", vocab, H, false);
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
