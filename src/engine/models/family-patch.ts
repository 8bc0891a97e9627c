import { BringupError } from "../../common/errors.js";
import type { Architecture, ModelConfig } from "../architecture.js";
import type { HostTensor } from "../loader/host-tensor.js";

/**
 * One named change a port makes to a family the engine already runs, without editing the family's
 * file: where the port's checkpoint differs from what the family reads. A patch rewrites the
 * config.json object before the family parses it, or renames tensors between the port's checkpoint
 * and the family's names (both ways: the family reads the port's checkpoint, and the port's tiny
 * checkpoint is written in the port's own names). The names are the port's own when no public
 * source names them.
 */
export interface FamilyPatch {
  /** A short slug, stable: tests and the port's page name the patch by it. */
  readonly name: string;
  /**
   * The config.json object as the family reads it, from the port's (`source` names the file in a
   * MODEL_CONFIG_INVALID). A field the patch reads is taken out, so the family never sees it.
   */
  readonly readConfig?: (json: Readonly<Record<string, unknown>>, source: string) => Record<string, unknown>;
  /** The name the family reads for a tensor the port's checkpoint stores as `name`. */
  readonly tensorToFamily?: (name: string) => string;
  /** The inverse of tensorToFamily: where the port's checkpoint stores the family's tensor `name`. */
  readonly tensorToCheckpoint?: (name: string) => string;
}

/** A port's checkpoints as an existing family plus patches (see patchFamily). */
export interface PatchedFamily {
  /** The `model_type` and `architectures` name the port's config.json carries. */
  readonly modelType: string;
  readonly architecture: string;
  /** The family, and the model_type of its own that the patched config is read as. */
  readonly base: Architecture;
  readonly baseModelType: string;
  /** Applied in order to the config; tensor renames compose. */
  readonly patches: readonly FamilyPatch[];
}

/**
 * The Architecture of a port's checkpoints that are `base`'s family with `patches` applied: its
 * config is read by the patches and then by the family (as `baseModelType`), its tensors renamed
 * on the way in, and its tiny model is the family's tiny model of the read config, written back in
 * the port's config and tensor names. The family's file is not touched; a registry entry
 * (models/registry.ts) names the result under the port's model_type.
 */
export function patchFamily(family: PatchedFamily): Architecture {
  const { base, patches } = family;
  const read = (json: unknown, source: string): Record<string, unknown> => {
    if (typeof json !== "object" || json === null || Array.isArray(json))
      throw new BringupError(
        "MODEL_CONFIG_INVALID",
        `${source}: (root): is not a JSON object; fix the file.`,
        { subject: source },
      );
    let c = json as Record<string, unknown>;
    if (c.model_type !== family.modelType)
      throw new BringupError(
        "MODEL_CONFIG_INVALID",
        `${source}: model_type: ${JSON.stringify(c.model_type)} is not ${JSON.stringify(family.modelType)}, the model type the ${family.architecture} patches read; fix the field.`,
        { subject: source },
      );
    for (const p of patches) c = p.readConfig?.(c, source) ?? c;
    return { ...c, model_type: family.baseModelType };
  };
  const toFamily = (name: string) => patches.reduce((n, p) => p.tensorToFamily?.(n) ?? n, name);
  const toCheckpoint = (name: string) => patches.reduceRight((n, p) => p.tensorToCheckpoint?.(n) ?? n, name);
  const renames = patches.some((p) => p.tensorToFamily !== undefined);
  const baseTiny = base.tinyModel?.bind(base);
  return {
    parseConfig: (json, source): ModelConfig => ({
      ...base.parseConfig(read(json, source), source),
      modelType: family.modelType,
    }),
    build: (config, weights) =>
      base.build(config, renames ? weights.renamed(toCheckpoint, toFamily) : weights),
    states: (config, switches) => base.states(config, switches),
    ignoresTensor: (name, config) => base.ignoresTensor?.(toFamily(name), config) === true,
    ...(baseTiny === undefined
      ? {}
      : {
          tinyModel(config, corpus, options) {
            const familyConfig = read(config, "reference config");
            const files = baseTiny(familyConfig, corpus, options);
            // What the family's tiny model wrote beyond the read config (vocabulary, end token,
            // dtype, stamp) goes onto the port's own config.
            const written = Object.fromEntries(
              Object.entries(files.config).filter(
                ([k, v]) => JSON.stringify(v) !== JSON.stringify(familyConfig[k]) && k !== "model_type",
              ),
            );
            const tensors = new Map<string, HostTensor>(
              [...files.tensors]
                .map(([name, t]) => [toCheckpoint(name), t] as const)
                .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
            );
            return {
              ...files,
              config: { ...config, ...written, architectures: [family.architecture] },
              tensors,
            };
          },
        }),
  };
}
