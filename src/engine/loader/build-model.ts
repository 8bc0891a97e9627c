import { BringupError } from "../../common/errors.js";
import type { Architecture, ModelConfig } from "../architecture.js";
import { fp8Switch, mxfp4Switch } from "../kernels/switches.js";
import type { CausalLM } from "../model/causal-lm.js";
import type { LoadedModel } from "../model/loaded-model.js";
import { REPLAY_SWITCH } from "../model/step-scratch.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { TextTokenizer } from "../tokenizer/tokenizer.js";
import type { TensorLookup } from "./host-tensor.js";
import { WeightSource } from "./weight-source.js";

/** Buffers some checkpoints carry that no model reads. */
const NEVER_WEIGHTS = /\.rotary_emb\.inv_freq$/;

/** A config.json read by the architecture of its model_type. */
export interface ResolvedConfig {
  readonly architecture: Architecture;
  readonly config: ModelConfig;
}

/**
 * Builds the model from the checkpoint's tensors `names`. A tensor no block reads, and that the
 * architecture does not knowingly skip, is MODEL_WEIGHTS_MISMATCH: a checkpoint of another shape
 * must not serve silently. Every model gets the engine's `replay` switch, one that reads MXFP4
 * weights the `mxfp4` switch, and one that reads block-scaled FP8 weights the `fp8` switch. `source`
 * names the checkpoint in errors.
 */
export function buildModel(
  { architecture, config }: ResolvedConfig,
  lookup: TensorLookup,
  names: readonly string[],
  source: string,
): CausalLM {
  const weights = new WeightSource(lookup, names, source);
  const model = architecture.build(config, weights);
  const extra = weights.unused(
    (n) => NEVER_WEIGHTS.test(n) || architecture.ignoresTensor?.(n, config) === true,
  );
  if (extra.length > 0) {
    throw new BringupError(
      "MODEL_WEIGHTS_MISMATCH",
      `${source}: tensor ${extra[0]}${extra.length > 1 ? ` (and ${extra.length - 1} more)` : ""} is in the checkpoint but no layer of the ${config.modelType} model its config.json describes reads it; the checkpoint and config.json do not match.`,
      { subject: extra[0] as string },
    );
  }
  const fp8 = weights.readFp8;
  return model.withSwitches([
    REPLAY_SWITCH,
    ...(weights.readMxfp4 ? [mxfp4Switch()] : []),
    ...(fp8.blocks.length > 0 ? [fp8Switch(fp8.blocks, fp8.scaledFits)] : []),
  ]);
}

/** The model of in-memory model files, read and built by `architecture` (see loadModel). */
export function modelOfFiles(name: string, files: TinyModelFiles, architecture: Architecture): LoadedModel {
  const config = architecture.parseConfig(files.config, `${name}: config.json`);
  const resolved = { architecture, config };
  const model = buildModel(resolved, (n) => files.tensors.get(n), [...files.tensors.keys()], name);
  const tokenizer = new TextTokenizer(files.tokenizerJson, files.tokenizerConfig, {
    eosTokenIds: config.eosTokenIds,
  });
  return { name, ...resolved, model, tokenizer, numParameters: files.numParameters };
}
