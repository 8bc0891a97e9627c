import { BringupError } from "../common/errors.js";
import { type Pin, PLATFORM, type Platform } from "./platform.js";
import { serveEnv } from "./serve.js";
import { assertPlainValue } from "./shell.js";
import { normalizePackageName, type Recipe, type RecipeManifest, type StatedPin } from "./source.js";

/**
 * Turns a manifest and the platform's pins into the facts its recipe states, or refuses: a recipe
 * is for a port with engine model code (its tiny reference config is what the device-vs-reference
 * gate serves), on one node, on the Gaudi software release the platform pins.
 */
export function resolveRecipe(manifest: RecipeManifest, platform: Platform = PLATFORM): Recipe {
  const port = assertPlainValue("id", manifest.id);
  if (manifest.reference === undefined) {
    throw new BringupError(
      "RECIPE_NO_MODEL_CODE",
      `port ${port} has no recipe: it has no engine model code and tiny reference config yet, so there is nothing for the device plugin to serve and no reference to gate it against. Bring it up on the engine first (a reference section in port.yaml whose architecture a family in src/engine/models/ serves).`,
      { subject: port },
    );
  }
  if (manifest.target.nodes !== 1) {
    throw new BringupError(
      "RECIPE_MULTI_NODE",
      `port ${port} runs on ${manifest.target.nodes} nodes; recipes serve on one node, so describe the multi-node setup in the port's page instead.`,
      { subject: port },
    );
  }
  const gaudiVersion = assertPlainValue("Gaudi software", platform.row.gaudiSoftware);
  if (manifest.software.gaudi_software !== gaudiVersion) {
    throw new BringupError(
      "RECIPE_PLATFORM_MISMATCH",
      `port ${port} states Gaudi software ${manifest.software.gaudi_software}, but the recipes follow vllm-gaudi ${platform.row.vllmGaudi} on Gaudi software ${gaudiVersion} (src/recipes/platform.ts); a recipe cannot build the port on another release, so change one of them.`,
      { subject: "software.gaudi_software" },
    );
  }
  const plain = (field: string, pin: Pin): Pin => ({ ...pin, value: assertPlainValue(field, pin.value) });
  const env = serveEnv(
    port,
    manifest.software.execution_mode,
    manifest.software.hpu_graphs,
    manifest.target.cards,
    manifest.software.serve_env ?? {},
  );
  for (const [name, value] of env) assertPlainValue(`software.serve_env.${name}`, value);
  const blocks = manifest.reference.device_blocks;
  return {
    port,
    image: plain("platform image", platform.image),
    gaudiVersion,
    gaudiBuild: plain("platform gaudi_build", platform.gaudiBuild),
    python: plain("platform python", platform.python),
    packages: platform.packages.map((pkg) => ({
      ...plain(`platform package ${pkg.name}`, pkg),
      name: assertPlainValue("platform package name", pkg.name),
      role: pkg.role,
      match: pkg.match,
      normalized: normalizePackageName(pkg.name),
    })),
    builds: platform.builds,
    cards: manifest.target.cards,
    ...(manifest.model.context_length === undefined ? {} : { maxModelLen: manifest.model.context_length }),
    tinyMaxModelLen: manifest.reference.max_model_len,
    executionMode: manifest.software.execution_mode,
    hpuGraphs: manifest.software.hpu_graphs,
    env,
    deviceRuns: platform.deviceRuns[port] ?? [],
    ...(blocks === undefined
      ? {}
      : {
          notServed: {
            // One line without control characters: the script prints it whole and its header wraps it.
            why: blocks.not_served.replace(/[\s\p{Cc}]+/gu, " ").trim(),
            record: assertPlainValue("reference.device_blocks.record", blocks.record),
          },
        }),
  };
}

/** Every pin a recipe states, in the order the generated files and pages list them. */
export function recipePins(recipe: Recipe): StatedPin[] {
  return [
    { name: "image", pin: recipe.image, release: false },
    {
      name: "Gaudi software",
      pin: { ...recipe.gaudiBuild, value: `${recipe.gaudiVersion}-${recipe.gaudiBuild.value}` },
      release: false,
    },
    { name: "Python", pin: recipe.python, release: false },
    ...recipe.packages.map((pkg) => ({ name: pkg.name, pin: pkg, release: pkg.match === "release" })),
  ];
}
