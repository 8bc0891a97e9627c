import { BringupError } from "../../common/errors.js";
import type { Architecture } from "../architecture.js";
import { type FamilyPatch, patchFamily } from "./family-patch.js";
import { llamaArchitecture } from "./llama.js";

/**
 * Muse Glimmer 30B (ports/muse-glimmer-30b): a Qwen3-MoE-shaped decoder (GQA with q/k norms, a
 * routed mixture of experts in every layer) that the llama family's qwen3_moe reading runs, plus
 * three patches for where the port's checkpoint differs. No public source describes Glimmer's
 * checkpoint: the model type `muse_glimmer`, the class `MuseGlimmerForCausalLM`, the fields and the
 * tensor names below are the port's own choice.
 */

/** The same field spelled twice is refused: the patch could not tell which one the checkpoint means. */
function take(
  c: Readonly<Record<string, unknown>>,
  source: string,
  from: string,
  to: string,
): Record<string, unknown> {
  const { [from]: value, ...rest } = c;
  if (value === undefined) return rest;
  if (c[to] !== undefined)
    throw new BringupError(
      "MODEL_CONFIG_INVALID",
      `${source}: ${to}: is set beside ${from}, which says the same for a Muse Glimmer checkpoint; keep ${from} only.`,
      { subject: source },
    );
  return { ...rest, [to]: value };
}

/**
 * Patch 1, a config field the stock loader misreads: Glimmer's config.json names its experts
 * `moe_num_experts` and `moe_top_k`. The llama family reads `num_experts` and
 * `num_experts_per_tok` and ignores unknown fields, so without the patch it builds dense MLPs and
 * the load fails on the first one's missing `mlp.gate_proj.weight`.
 */
export const EXPERT_FIELDS: FamilyPatch = {
  name: "expert-fields",
  readConfig: (c, source) =>
    take(take(c, source, "moe_num_experts", "num_experts"), source, "moe_top_k", "num_experts_per_tok"),
};

const QWEN_ROUTER = /^(model\.layers\.\d+\.mlp)\.gate\.weight$/;
const GLIMMER_ROUTER = /^(model\.layers\.\d+\.mlp)\.router\.weight$/;

/**
 * Patch 2, a tensor-name remap: Glimmer stores each layer's router as `mlp.router.weight` where
 * Qwen3-MoE has `mlp.gate.weight`. Without it the load fails on the missing `mlp.gate.weight`.
 */
export const ROUTER_NAME: FamilyPatch = {
  name: "router-name",
  tensorToFamily: (name) => name.replace(GLIMMER_ROUTER, "$1.gate.weight"),
  tensorToCheckpoint: (name) => name.replace(QWEN_ROUTER, "$1.router.weight"),
};

/**
 * Patch 3, a layer pattern the stock loader silently ignores: Glimmer interleaves sliding-window
 * layers, said once as `sliding_window_pattern: N` (every Nth layer full, the others sliding over
 * `sliding_window` tokens, as Gemma 2/3 configs spell it). The llama family reads per-layer
 * `layer_types` and ignores the pattern, so without the patch every layer attends to the whole
 * context: the model loads and serves, but computes other attention than the checkpoint's, and
 * the window-sized KV layout saves nothing (the kv-capacity gate fails).
 */
export const SLIDING_PATTERN: FamilyPatch = {
  name: "sliding-pattern",
  readConfig: (c, source) => {
    const { sliding_window_pattern: pattern, ...rest } = c;
    if (pattern === undefined) return rest;
    const fail = (field: string, message: string): never => {
      throw new BringupError("MODEL_CONFIG_INVALID", `${source}: ${field}: ${message}`, { subject: source });
    };
    if (!Number.isInteger(pattern) || (pattern as number) < 1)
      fail("sliding_window_pattern", `${JSON.stringify(pattern)} is not a positive integer; set it.`);
    if (c.layer_types != null)
      fail("layer_types", "is set beside sliding_window_pattern; a Muse Glimmer config says one of them.");
    const layers = c.num_hidden_layers;
    if (!Number.isInteger(layers) || (layers as number) < 1)
      fail("num_hidden_layers", "is required with sliding_window_pattern; set it.");
    const n = pattern as number;
    const layerTypes = Array.from({ length: layers as number }, (_, i) =>
      (i + 1) % n === 0 ? "full_attention" : "sliding_attention",
    );
    return { ...rest, layer_types: layerTypes };
  },
};

/** The port's three patches, in the order they apply. */
export const GLIMMER_PATCHES: readonly FamilyPatch[] = [EXPERT_FIELDS, ROUTER_NAME, SLIDING_PATTERN];

export const GLIMMER_MODEL_TYPE = "muse_glimmer";
export const GLIMMER_ARCHITECTURE = "MuseGlimmerForCausalLM";

/** Muse Glimmer's checkpoints as the llama family's qwen3_moe with `patches` (all three by default). */
export function museGlimmerFamily(patches: readonly FamilyPatch[] = GLIMMER_PATCHES): Architecture {
  return patchFamily({
    modelType: GLIMMER_MODEL_TYPE,
    architecture: GLIMMER_ARCHITECTURE,
    base: llamaArchitecture,
    baseModelType: "qwen3_moe",
    patches,
  });
}

export const museGlimmerArchitecture: Architecture = museGlimmerFamily();
