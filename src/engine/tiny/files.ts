import { type HostTensor, parameterCount } from "../loader/host-tensor.js";
import { trainByteLevelBpe } from "../tokenizer/bpe-train.js";
import { buildTokenizerFiles } from "../tokenizer/tokenizer-files.js";

/** Everything a tiny model directory holds, in memory. */
export interface TinyModelFiles {
  readonly config: Record<string, unknown>;
  readonly generationConfig: Record<string, unknown>;
  readonly tokenizerJson: Record<string, unknown>;
  readonly tokenizerConfig: Record<string, unknown>;
  /** Tensors by HF name, in name order. */
  readonly tensors: ReadonlyMap<string, HostTensor>;
  readonly numParameters: number;
}

/** A tiny model's tokenizer: its files, vocabulary size and end-of-sequence ids. */
export interface TinyTokenizer {
  readonly files: ReturnType<typeof buildTokenizerFiles>;
  readonly vocab: number;
  /** `<|endoftext|>` then `<|im_end|>`, as config.json and generation_config.json list them. */
  readonly eos: number[];
}

/** A byte-level BPE of `bpeVocab` ids trained on `corpus`, with the chat specials appended. */
export function tinyTokenizer(
  corpus: string,
  bpeVocab: number,
  maxPositionEmbeddings: number,
): TinyTokenizer {
  const files = buildTokenizerFiles(trainByteLevelBpe(corpus, bpeVocab), maxPositionEmbeddings);
  const eos = [files.specialIds["<|endoftext|>"] as number, files.specialIds["<|im_end|>"] as number];
  return { files, vocab: files.size, eos };
}

/**
 * Assembles a tiny model's files: tensors in name order, greedy generation stopping at the
 * tokenizer's eos ids, and `numParameters` counted from the tensors' shapes unless given.
 */
export function tinyModelFiles(
  config: Record<string, unknown>,
  tok: TinyTokenizer,
  tensors: ReadonlyMap<string, HostTensor>,
  numParameters: number = countParameters(tensors),
): TinyModelFiles {
  const sorted = new Map([...tensors.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return {
    config,
    generationConfig: { eos_token_id: tok.eos, do_sample: false },
    tokenizerJson: tok.files.tokenizerJson,
    tokenizerConfig: tok.files.tokenizerConfig,
    tensors: sorted,
    numParameters,
  };
}

/** Parameters over all tensors, counted as the loader counts them (parameterCount). */
export function countParameters(tensors: ReadonlyMap<string, HostTensor>): number {
  let n = 0;
  for (const [name, t] of tensors)
    n += parameterCount(
      name,
      t.data.byteLength,
      t.shape.reduce((a, b) => a * b, 1),
      t.dtype,
    );
  return n;
}
