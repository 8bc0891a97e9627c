import { BringupError } from "../common/errors.js";
import type { LayerStates } from "./cache/state-spec.js";
import type { WeightSource } from "./loader/weight-source.js";
import type { CausalLM } from "./model/causal-lm.js";
import type { TinyModelFiles } from "./tiny/generate.js";

/** What every architecture's parsed config says, whatever else it holds. */
export interface ModelConfig {
  readonly modelType: string;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly maxPositionEmbeddings: number;
  readonly bosTokenId?: number;
  readonly eosTokenIds: readonly number[];
}

/**
 * Model code for one architecture: how its config.json is read and how a model is built from
 * engine blocks over the checkpoint's public tensor names. The llama family is built in
 * (models/llama.ts); each port's model.ts exports its own.
 */
export interface Architecture<C extends ModelConfig = ModelConfig> {
  /** The config.json `model_type` values this code reads. */
  readonly modelTypes: readonly string[];
  /** Parses a config.json object; throws BringupError MODEL_CONFIG_INVALID naming `source` and the field. */
  parseConfig(json: unknown, source: string): C;
  /** Builds the model from `weights`; throws MODEL_WEIGHT_MISSING / MODEL_WEIGHTS_MISMATCH naming the tensor. */
  build(config: C, weights: WeightSource): CausalLM;
  /**
   * What each layer keeps per sequence when run with `switches` (a missing switch takes its
   * default), from the config alone: equal to the built model's `states(switches)`.
   */
  states(config: C, switches: ReadonlyMap<string, string>): LayerStates[];
  /** Checkpoint tensors the model knowingly does not use (for example MTP layers). */
  ignoresTensor?(name: string): boolean;
}

/**
 * What a port's model.ts exports as `portModel`: its architecture and the tiny reference models
 * `bringup up` runs on the CPU. `config` is the manifest's `reference.config` (an HF config.json
 * object for the port's own model_type).
 */
export interface PortModel {
  readonly architecture: Architecture;
  /** The tiny reference model of `config`: a BPE trained on `corpus` and seeded random weights. */
  tinyModel(
    config: Record<string, unknown>,
    corpus: string,
    options?: { readonly seed?: number },
  ): TinyModelFiles;
  /**
   * A variant of the architecture whose weights are constructed to retrieve (copy what followed an
   * earlier occurrence of the current text), so a needle gate can pass on the embedded engine.
   */
  retrievalModel?(corpus: string, options: { readonly maxPositionEmbeddings: number }): TinyModelFiles;
}

/**
 * The architecture among `architectures` that reads `modelType`; throws MODEL_CONFIG_INVALID
 * naming every supported type otherwise, or ARCHITECTURE_CONFLICT when two claim it.
 */
export function findArchitecture(
  modelType: unknown,
  architectures: readonly Architecture[],
  source: string,
): Architecture {
  const matches = architectures.filter(
    (a) => typeof modelType === "string" && a.modelTypes.includes(modelType),
  );
  if (matches.length > 1 && matches.some((a) => a !== matches[0])) {
    throw new BringupError(
      "ARCHITECTURE_CONFLICT",
      `model_type "${String(modelType)}" is read by two architectures; give each port's architecture its own model_type.`,
      { subject: String(modelType) },
    );
  }
  const found = matches[0];
  if (found === undefined) {
    const known = [...new Set(architectures.flatMap((a) => a.modelTypes))].sort();
    throw new BringupError(
      "MODEL_CONFIG_INVALID",
      `${source}: model_type ${JSON.stringify(modelType)} is not supported by the reference engine (supported: ${known.join(", ")}); add it through a port's model code.`,
      { subject: source },
    );
  }
  return found;
}
