import { BringupError } from "../../common/errors.js";
import type { Architecture } from "../architecture.js";

/**
 * One family of model code: the `architectures` class names and `model_type` values of the
 * config.json files it reads, and its module, imported the first time a config names it.
 */
interface FamilyEntry {
  readonly architectures: readonly string[];
  readonly modelTypes: readonly string[];
  load(): Promise<Architecture>;
}

/**
 * Every family the engine runs, as vLLM's models/registry.py lists them: a new family is one file
 * under src/engine/models/ and one entry here (see src/engine/README.md).
 */
const FAMILIES: readonly FamilyEntry[] = [
  {
    architectures: [
      "LlamaForCausalLM",
      "MistralForCausalLM",
      "MixtralForCausalLM",
      "Qwen2ForCausalLM",
      "Qwen3ForCausalLM",
      "Qwen3MoeForCausalLM",
    ],
    modelTypes: ["llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe"],
    load: async () => (await import("./llama.js")).llamaArchitecture,
  },
  {
    architectures: ["MiMoV2FlashForCausalLM"],
    modelTypes: ["mimo_v2_flash"],
    load: async () => (await import("./mimo.js")).mimoArchitecture,
  },
  {
    architectures: ["DeepseekV3ForCausalLM", "GlmMoeDsaForCausalLM"],
    modelTypes: ["deepseek_v3", "kimi_k2", "glm_moe_dsa"],
    load: async () => (await import("./deepseek-v3.js")).deepseekV3Architecture,
  },
  {
    architectures: ["Glm53FlashForCausalLM"],
    modelTypes: ["glm5_3_flash"],
    load: async () => (await import("./glm-5.3-flash.js")).glmFlashArchitecture,
  },
  {
    architectures: ["DeepseekV4ForCausalLM"],
    modelTypes: ["deepseek_v4"],
    load: async () => (await import("./deepseek-v4.js")).deepseekV4Architecture,
  },
  {
    // A port's patches over the llama family's qwen3_moe (models/family-patch.ts).
    architectures: ["MuseGlimmerForCausalLM"],
    modelTypes: ["muse_glimmer"],
    load: async () => (await import("./muse-glimmer.js")).museGlimmerArchitecture,
  },
  {
    architectures: ["MiniMaxM3ForCausalLM", "GptOssForCausalLM"],
    modelTypes: ["minimax_m3", "gpt_oss"],
    load: async () => (await import("./minimax-m3.js")).minimaxArchitecture,
  },
  {
    architectures: ["InklingForCausalLM"],
    modelTypes: ["inkling"],
    load: async () => (await import("./inkling.js")).inklingArchitecture,
  },
  {
    architectures: ["MuseSparkForCausalLM"],
    modelTypes: ["muse_spark"],
    load: async () => (await import("./muse-spark.js")).museSparkArchitecture,
  },
];

/**
 * The family that reads `configJson` (a config.json object): the one listing its first
 * `architectures` name, else the one listing its `model_type`. MODEL_CONFIG_INVALID names both and
 * every supported one when none does; `source` names the file.
 */
export async function findArchitecture(configJson: unknown, source: string): Promise<Architecture> {
  const { architectures, model_type: modelType } = (configJson ?? {}) as {
    architectures?: unknown;
    model_type?: unknown;
  };
  const name = Array.isArray(architectures) ? architectures[0] : undefined;
  const entry =
    FAMILIES.find((f) => typeof name === "string" && f.architectures.includes(name)) ??
    FAMILIES.find((f) => typeof modelType === "string" && f.modelTypes.includes(modelType));
  if (entry === undefined) {
    const known = FAMILIES.flatMap((f) => f.modelTypes).sort();
    const named = name === undefined ? "" : `architecture ${JSON.stringify(name)} and `;
    throw new BringupError(
      "MODEL_CONFIG_INVALID",
      `${source}: ${named}model_type ${JSON.stringify(modelType)} are not supported by the reference engine (supported model types: ${known.join(", ")}); add the family under src/engine/models/ (see src/engine/README.md).`,
      { subject: source },
    );
  }
  return entry.load();
}
