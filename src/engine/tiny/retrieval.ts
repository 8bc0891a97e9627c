import { modelOfFiles } from "../loader/build-model.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { llamaArchitecture, llamaParameters, parseLlamaConfig } from "../models/llama.js";
import { copySlots } from "./copy-circuit.js";
import { placeCopyCircuit } from "./copy-circuit-placement.js";
import { readCorpus } from "./corpus.js";
import { type TinyModelFiles, tinyModelFiles, tinyTokenizer } from "./files.js";
import { putParameters } from "./weights.js";

/**
 * A constructed (not trained) two-layer llama whose weights implement an exact-copy retrieval
 * circuit, so that a needle gate can be seen passing on the embedded engine: the engine's copy
 * circuit (copy-circuit-placement.ts) placed into the llama shape below.
 *
 * Residual stream (hidden 240), as slots of unit-norm random codes:
 *   own_m [0,16)     the token's match code m(t)              (written by the embedding)
 *   own_u [16,80)    the token's output code u(t)             (written by the embedding)
 *   prev1..prev6 [80,176)  m of the tokens 1..6 back          (written by layer 0)
 *   out_u [176,240)  u of the token to copy                   (written by layer 1, read by the LM head)
 * Each head has 128 features: the first 32 rotated by RoPE (partial_rotary_factor 0.25), the other
 * 96 not rotated.
 *
 * Layer 0, six previous-token heads (offset δ = 1..6). Query and key come from biases only, in the
 * rotated features: per frequency pair f the key is (1, 0) and the query is A·(cos, sin)(-ω_f δ),
 * so the score between positions i and j is A/√128 · Σ_f cos(ω_f (i - j - δ)): largest at exactly
 * i - j = δ. A is chosen so the gap to every other distance within max_position_embeddings is at
 * least 30 logits (the nearest rival is always a neighbour, about 0.69·A/√128 lower with
 * theta 10000), which makes the softmax a one-hot pick. The value copies own_m, and o_proj writes
 * it into the head's prev slot.
 *
 * Layer 1, one induction head. Its query (unrotated features) is m of the last six tokens at i,
 * and its key at j is m of the six tokens before j, so the score counts how many of them agree,
 * times 30 logits. The head attends to the position that follows the earlier occurrence of the
 * current 6-gram, copies its u code into out_u, and the LM head (rows u(t)) turns it into a logit
 * margin of tens, so greedy decoding reproduces the text that followed: a needle
 * "... for KEY is: VALUE." is recalled from a prompt ending "for KEY is:". Six tokens (not two or
 * three) because the small BPE splits words and numbers into short pieces: the window must still
 * reach back to the key while the first pieces of the value are copied. The MLPs are zero, and the
 * norm weights undo RMSNorm's rescaling, since every slot holds a unit vector.
 *
 * Random codes of 16 (match) and 64 (output) features overlap by about 1/4 and 1/8, so partial
 * and accidental matches stay well below a full match.
 */

/** The circuit's sizes: 6-token matches over 16-feature match codes, 64-feature output codes. */
const CIRCUIT = { m: 16, u: 64, ngram: 6, matchLogit: 30, prevMargin: 30, outputLogit: 40 } as const;
const ROTARY = 32;
const HEAD_DIM = ROTARY + CIRCUIT.ngram * CIRCUIT.m;
const HEADS = CIRCUIT.ngram;

export interface RetrievalOptions {
  /** Seed of the random codes (default 0). */
  readonly seed?: number;
  /** BPE vocabulary size trained on the corpus (default 512). */
  readonly bpeVocab?: number;
  /** Longest context the previous-token heads stay sharp for (default 16384). */
  readonly maxPositionEmbeddings?: number;
}

/** The files of the constructed retrieval model over a BPE trained on `corpus`. */
export function generateRetrievalModel(corpus: string, options: RetrievalOptions = {}): TinyModelFiles {
  const seed = options.seed ?? 0;
  const maxPos = options.maxPositionEmbeddings ?? 16384;
  const tok = tinyTokenizer(corpus, options.bpeVocab ?? 512, maxPos);
  const { vocab, eos } = tok;
  const hidden = copySlots(CIRCUIT.m, CIRCUIT.u, CIRCUIT.ngram).hidden;
  const config: Record<string, unknown> = {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    vocab_size: vocab,
    hidden_size: hidden,
    intermediate_size: 1,
    num_hidden_layers: 2,
    num_attention_heads: HEADS,
    num_key_value_heads: HEADS,
    head_dim: HEAD_DIM,
    partial_rotary_factor: ROTARY / HEAD_DIM,
    hidden_act: "silu",
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: maxPos,
    tie_word_embeddings: false,
    attention_bias: true,
    bos_token_id: null,
    eos_token_id: eos,
    torch_dtype: "float32",
    bringup_tiny: { size: "retrieval", seed, construction: "previous-token + induction heads" },
  };
  // Every declared parameter at zero; the circuit writes the ones it uses.
  const tensors = new Map<string, HostTensor>();
  const { outer, layers } = llamaParameters(parseLlamaConfig(config, "the retrieval model's config"));
  putParameters(tensors, seed, [...outer, ...layers], { zeros: true });
  const files = tinyModelFiles(config, tok, tensors);
  return placeCopyCircuit(files, modelOfFiles("retrieval", files, llamaArchitecture), { ...CIRCUIT, seed });
}

/** The retrieval model over the shipped corpus, ready for an Engine or startServer({ model }). */
export async function createRetrievalModel(
  options: RetrievalOptions & { readonly corpusDir?: string } = {},
): Promise<LoadedModel> {
  const files = generateRetrievalModel(await readCorpus(options.corpusDir), options);
  return modelOfFiles("retrieval", files, llamaArchitecture);
}
