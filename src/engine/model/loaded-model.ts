import type { Architecture, ModelConfig } from "../architecture.js";
import type { TextTokenizer } from "../tokenizer/tokenizer.js";
import type { CausalLM } from "./causal-lm.js";

/** A model ready to run: its parsed config, the architecture that built it, its blocks and tokenizer. */
export interface LoadedModel {
  /** The name it is served under by default (the directory's base name or the tiny size's name). */
  readonly name: string;
  readonly config: ModelConfig;
  readonly architecture: Architecture;
  readonly model: CausalLM;
  readonly tokenizer: TextTokenizer;
  /** Where it was loaded from, when it came from disk. */
  readonly directory?: string;
  /** Total parameter count. */
  readonly numParameters: number;
}
