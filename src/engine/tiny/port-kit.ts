import { BringupError } from "../../common/errors.js";
import type { ParameterDecl, Parameters } from "../blocks/parameters.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { TinyModelFiles } from "./files.js";
import { tinyModelFiles, tinyTokenizer } from "./files.js";
import { putParameters, type TinyDtype } from "./weights.js";

/** Specials the tiny tokenizers append after the trained vocabulary. */
const SPECIALS = 3;

/** What a port's tinyModel writes its seeded tensors with, and how it ends as model files. */
export interface TinyKit {
  /** Tokens of the trained BPE with its specials (the config's vocab_size, or fewer). */
  readonly vocab: number;
  /** Declared parameters as they declare their draws, matrices stored in `storage` (default f32). */
  parameters(parameters: Parameters | readonly ParameterDecl[], storage?: TinyDtype): void;
  /** The model files: `config` with the trained vocabulary, its end token and the port's stamp. */
  files(config: Record<string, unknown>, architecture: string, port?: string): TinyModelFiles;
}

/** The config fields a tiny tokenizer is trained to. */
export interface TinyVocabSpec {
  readonly vocabSize: number;
  readonly maxPositionEmbeddings: number;
}

/**
 * A byte-level BPE trained on `corpus` to the config's vocab_size, three of its ids specials;
 * refused naming vocab_size when that leaves no room for merges.
 */
export function tinyPortTokenizer(spec: TinyVocabSpec, corpus: string): ReturnType<typeof tinyTokenizer> {
  if (spec.vocabSize <= 256 + SPECIALS) {
    throw new BringupError(
      "MODEL_CONFIG_INVALID",
      `reference config: vocab_size: ${spec.vocabSize} leaves no room for BPE merges over 256 bytes and ${SPECIALS} specials; raise it.`,
      { subject: "vocab_size" },
    );
  }
  return tinyTokenizer(corpus, spec.vocabSize - SPECIALS, spec.maxPositionEmbeddings);
}

/**
 * The start of every port's tiny reference model: a byte-level BPE trained on `corpus` to the
 * config's vocab_size (three of its ids are specials) and a writer of declared parameters, so the same
 * config, corpus and seed give the same bytes whatever order the tensors are written in.
 */
export function tinyKit(spec: TinyVocabSpec, corpus: string, seed: number): TinyKit {
  const tok = tinyPortTokenizer(spec, corpus);
  const tensors = new Map<string, HostTensor>();
  return {
    vocab: tok.vocab,
    parameters: (parameters, storage) =>
      putParameters(tensors, seed, parameters, storage !== undefined ? { storage } : {}),
    files: (config, architecture, port) =>
      tinyModelFiles(
        {
          ...config,
          architectures: [architecture],
          vocab_size: tok.vocab,
          bos_token_id: null,
          eos_token_id: tok.eos,
          torch_dtype: "float32",
          bringup_tiny: { ...(port !== undefined ? { port } : {}), seed },
        },
        tok,
        tensors,
      ),
  };
}
