import type { ModelConfig } from "../config.js";
import type { TextTokenizer } from "../tokenizer/tokenizer.js";
import type { ModelWeights } from "./weights.js";

/** A model ready to run: its resolved config, weights in engine form and tokenizer. */
export interface LoadedModel {
  /** The name it is served under by default (the directory's base name or the tiny size's name). */
  readonly name: string;
  readonly config: ModelConfig;
  readonly weights: ModelWeights;
  readonly tokenizer: TextTokenizer;
  /** Where it was loaded from, when it came from disk. */
  readonly directory?: string;
  /** Total parameter count. */
  readonly numParameters: number;
}
