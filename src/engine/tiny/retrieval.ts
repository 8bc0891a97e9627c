import type { LoadedModel } from "../model/loaded-model.js";
import {
  codeEmbedding,
  codeLmHead,
  copyOutputCode,
  copySlots,
  inductionQueryKey,
  putAttention,
  tokenCodes,
  zeroMlpLayer,
} from "./copy-circuit.js";
import { readCorpus } from "./corpus.js";
import { tinyModelFiles, tinyTokenizer } from "./files.js";
import { type TinyModelFiles, tinyFilesToModel } from "./generate.js";
import { f32Tensors, filled, nearestRivalGap } from "./weights.js";

/**
 * A constructed (not trained) two-layer llama whose weights implement an exact-copy retrieval
 * circuit, so that a needle gate can be seen passing on the embedded engine.
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
 * least PREV_MARGIN logits (the nearest rival is always a neighbour, about 0.69·A/√128 lower with
 * theta 10000), which makes the softmax a one-hot pick. The value copies own_m, and o_proj writes
 * it into the head's prev slot.
 *
 * Layer 1, one induction head. Its query (unrotated features) is m of the last six tokens at i,
 * and its key at j is m of the six tokens before j, so the score counts how many of them agree,
 * times MATCH_LOGIT. The head attends to the position that follows the earlier occurrence of the
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

/** Tokens matched by the induction head: the current one and WINDOW - 1 before it. */
const WINDOW = 6;
const M = 16;
const U = 64;
const ROTARY = 32;
const HEAD_DIM = ROTARY + WINDOW * M;
const HEADS = WINDOW;
const SLOTS = copySlots(M, U, WINDOW);
const { hidden: HIDDEN, ownM: OWN_M, ownU: OWN_U, prev: PREV, outU: OUT_U } = SLOTS;
const ROPE_THETA = 10000;
/** Logits between the previous-token pick and any other position. */
const PREV_MARGIN = 30;
/** Logits per matching token in the induction head. */
const MATCH_LOGIT = 30;
/** Scale of the LM head over the copied output code. */
const OUTPUT_LOGIT = 40;

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
  const codes = tokenCodes(seed, vocab, M, U);
  const { tensors, put } = f32Tensors();
  put("model.embed_tokens.weight", [vocab, HIDDEN], codeEmbedding(codes, HIDDEN, OWN_M, OWN_U));

  const qkv = HEADS * HEAD_DIM;
  // |x| is the norm of the unit codes the stream holds: sqrt(2) before layer 0, sqrt(2 + WINDOW) before layer 1.
  const layer = (i: number, norm: number) => zeroMlpLayer(put, i, HIDDEN, norm / Math.sqrt(HIDDEN));

  // Layer 0: previous-token heads, positions only.
  const p0 = layer(0, Math.SQRT2);
  const invFreq = Array.from({ length: ROTARY / 2 }, (_, f) => 1 / ROPE_THETA ** ((2 * f) / ROTARY));
  const amplitude = (PREV_MARGIN * Math.sqrt(HEAD_DIM)) / nearestRivalGap(invFreq, maxPos);
  const q0Bias = new Float32Array(qkv);
  const k0Bias = new Float32Array(qkv);
  const v0 = new Float32Array(qkv * HIDDEN);
  const o0 = new Float32Array(HIDDEN * qkv);
  for (let h = 0; h < HEADS; h++) {
    const offset = h + 1;
    const base = h * HEAD_DIM;
    for (const [f, w] of invFreq.entries()) {
      q0Bias[base + f] = amplitude * Math.cos(-w * offset);
      q0Bias[base + f + ROTARY / 2] = amplitude * Math.sin(-w * offset);
      k0Bias[base + f] = 1;
    }
    for (let r = 0; r < M; r++) {
      v0[(base + r) * HIDDEN + OWN_M + r] = 1;
      o0[(PREV + h * M + r) * qkv + base + r] = 1;
    }
  }
  const [q0, k0] = [new Float32Array(qkv * HIDDEN), new Float32Array(qkv * HIDDEN)];
  putAttention(put, p0, HIDDEN, { q: q0, k: k0, v: v0, o: o0, qBias: q0Bias, kBias: k0Bias });

  // Layer 1: one induction head (head 0) over the unrotated features; the other heads stay silent.
  const p1 = layer(1, Math.sqrt(2 + WINDOW));
  const gain = Math.sqrt(MATCH_LOGIT * Math.sqrt(HEAD_DIM));
  const { q: q1, k: k1 } = inductionQueryKey(SLOTS, qkv, ROTARY, gain);
  const { v: v1, o: o1 } = copyOutputCode(SLOTS, qkv, qkv);
  putAttention(put, p1, HIDDEN, { q: q1, k: k1, v: v1, o: o1 });

  put("model.norm.weight", [HIDDEN], filled(HIDDEN, Math.sqrt((3 + WINDOW) / HIDDEN)));
  put("lm_head.weight", [vocab, HIDDEN], codeLmHead(codes, HIDDEN, OUT_U, OUTPUT_LOGIT));

  const config: Record<string, unknown> = {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    vocab_size: vocab,
    hidden_size: HIDDEN,
    intermediate_size: 1,
    num_hidden_layers: 2,
    num_attention_heads: HEADS,
    num_key_value_heads: HEADS,
    head_dim: HEAD_DIM,
    partial_rotary_factor: ROTARY / HEAD_DIM,
    hidden_act: "silu",
    rms_norm_eps: 1e-6,
    rope_theta: ROPE_THETA,
    max_position_embeddings: maxPos,
    tie_word_embeddings: false,
    attention_bias: true,
    bos_token_id: null,
    eos_token_id: eos,
    torch_dtype: "float32",
    bringup_tiny: { size: "retrieval", seed, construction: "previous-token + induction heads" },
  };
  return tinyModelFiles(config, tok, tensors);
}

/** The retrieval model over the shipped corpus, ready for an Engine or startServer({ model }). */
export async function createRetrievalModel(
  options: RetrievalOptions & { readonly corpusDir?: string } = {},
): Promise<LoadedModel> {
  return tinyFilesToModel("retrieval", generateRetrievalModel(await readCorpus(options.corpusDir), options));
}
