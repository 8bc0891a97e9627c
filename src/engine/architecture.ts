import { BringupError } from "../common/errors.js";
import type { ModelConfig } from "./config.js";
import type { TinyModelFiles } from "./tiny/generate.js";

/**
 * Model code for an architecture the engine does not parse by itself: a port's model.ts says how
 * its config.json maps onto the engine's blocks (per-layer attention kinds, head sizes, RoPE,
 * MoE routing). Registered architectures are consulted before the built-in llama family.
 */
export interface Architecture {
  /** The config.json `model_type` values this code reads. */
  readonly modelTypes: readonly string[];
  /** Parses a config.json object; throws BringupError MODEL_CONFIG_INVALID naming `source`. */
  parseConfig(json: unknown, source: string): ModelConfig;
  /**
   * The name this architecture's checkpoints give a tensor the engine knows by `engineName` (for
   * example a sink vector stored under another name); absent when the names agree.
   */
  checkpointTensorName?(engineName: string): string;
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

const registry = new Map<string, Architecture>();

/** Makes the engine read config.json files of `architecture.modelTypes` with its parser. */
export function registerArchitecture(architecture: Architecture): void {
  for (const type of architecture.modelTypes) {
    const existing = registry.get(type);
    if (existing !== undefined && existing !== architecture) {
      throw new BringupError(
        "ARCHITECTURE_CONFLICT",
        `model_type "${type}" is already registered by other model code; give each port's architecture its own model_type.`,
        { subject: type },
      );
    }
    registry.set(type, architecture);
  }
}

/** The registered architecture for a model_type, if any. */
export function registeredArchitecture(modelType: string): Architecture | undefined {
  return registry.get(modelType);
}

/** Every registered model_type, for error messages. */
export function registeredModelTypes(): string[] {
  return [...registry.keys()].sort();
}
