import type { TrainedBpe } from "./bpe-train.js";

/** Special tokens of the tiny models' ChatML convention, appended after the trained vocabulary. */
export const TINY_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

/** A ChatML chat template (system/user/assistant turns between <|im_start|> and <|im_end|>). */
export const CHATML_TEMPLATE =
  "{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";

export interface TokenizerFiles {
  readonly tokenizerJson: Record<string, unknown>;
  readonly tokenizerConfig: Record<string, unknown>;
  /** Ids of the special tokens, by content. */
  readonly specialIds: Readonly<Record<string, number>>;
  /** The number of ids used (trained tokens plus specials). */
  readonly size: number;
}

/** The HF tokenizer.json and tokenizer_config.json of a byte-level BPE with ChatML specials. */
export function buildTokenizerFiles(bpe: TrainedBpe, maxLength: number): TokenizerFiles {
  const vocab: Record<string, number> = {};
  bpe.vocab.forEach((token, id) => {
    vocab[token] = id;
  });
  const specialIds: Record<string, number> = {};
  const addedTokens = TINY_SPECIAL_TOKENS.map((content, i) => {
    const id = bpe.vocab.length + i;
    specialIds[content] = id;
    return {
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    };
  });
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: { ...byteLevel, trim_offsets: false },
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: bpe.merges.map(([a, b]) => [a, b]),
    },
  };
  const addedTokensDecoder: Record<string, unknown> = {};
  for (const t of addedTokens) {
    addedTokensDecoder[String(t.id)] = {
      content: t.content,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: true,
    };
  }
  const tokenizerConfig = {
    tokenizer_class: "PreTrainedTokenizerFast",
    added_tokens_decoder: addedTokensDecoder,
    bos_token: null,
    eos_token: "<|im_end|>",
    pad_token: "<|endoftext|>",
    unk_token: null,
    add_bos_token: false,
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
    model_max_length: maxLength,
    chat_template: CHATML_TEMPLATE,
  };
  return { tokenizerJson, tokenizerConfig, specialIds, size: bpe.vocab.length + addedTokens.length };
}
