import type { LayerStates } from "./cache/state-spec.js";
import type { WeightSource } from "./loader/weight-source.js";
import type { CausalLM } from "./model/causal-lm.js";
import type { TinyModelFiles } from "./tiny/files.js";

/** What every architecture's parsed config says, whatever else it holds. */
export interface ModelConfig {
  readonly modelType: string;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly maxPositionEmbeddings: number;
  readonly bosTokenId?: number;
  readonly eosTokenIds: readonly number[];
}

/** What a tiny model is stamped and seeded with. */
export interface TinyModelOptions {
  /** Weight seed (default 0): the same config, corpus and seed give the same bytes. */
  readonly seed?: number;
  /** The port whose reference model this is, stamped into its config's `bringup_tiny`. */
  readonly port?: string;
}

/**
 * Model code for one architecture family (src/engine/models/, found from a config.json by
 * models/registry.ts): how its config.json is read, how a model is built from engine blocks over
 * the checkpoint's public tensor names, and the tiny models `bringup up` runs on the CPU.
 */
export interface Architecture<C extends ModelConfig = ModelConfig> {
  /** Parses a config.json object; throws BringupError MODEL_CONFIG_INVALID naming `source` and the field. */
  parseConfig(json: unknown, source: string): C;
  /** Builds the model from `weights`; throws MODEL_WEIGHT_MISSING / MODEL_WEIGHTS_MISMATCH naming the tensor. */
  build(config: C, weights: WeightSource): CausalLM;
  /**
   * What each layer keeps per sequence when run with `switches` (a missing switch takes its
   * default), from the config alone: equal to the built model's `states(switches)`.
   */
  states(config: C, switches: ReadonlyMap<string, string>): LayerStates[];
  /** Checkpoint tensors the model of `config` knowingly does not use (for example MTP layers). */
  ignoresTensor?(name: string, config: C): boolean;
  /** The tiny reference model of `config` (a config.json object): a BPE trained on `corpus`, seeded weights. */
  tinyModel?(config: Record<string, unknown>, corpus: string, options?: TinyModelOptions): TinyModelFiles;
  /**
   * A variant of `config`'s architecture whose weights are constructed to retrieve (copy what
   * followed an earlier occurrence of the current text), so a needle gate can pass on the
   * embedded engine; absent where the family has none for `config`.
   */
  retrievalModel?(
    config: Record<string, unknown>,
    corpus: string,
    options: TinyModelOptions & { readonly maxPositionEmbeddings: number },
  ): TinyModelFiles | undefined;
}
