import { dockerBuildCommand, portInImage } from "./dockerfile.js";
import { BUILD_WHEEL, PLUGIN_DISTRIBUTION, pinsStampPath } from "./install-script.js";
import { recipePins, resolveRecipe } from "./pins.js";
import { PLATFORM, type Platform } from "./platform.js";
import { serveCommandLine } from "./serve.js";
import type { RecipeManifest, StatedPin } from "./source.js";

/** What a port's page says about its recipe: how to build, serve and gate it, and where each pin comes from. */
export type RecipeSummary =
  | {
      state: "generated";
      /** Run from the repository root, in order. */
      build: string[];
      /** Environment then interpreter and flags; MODEL is the reader's to set. */
      serve: string;
      env: [name: string, value: string][];
      /** Every pin with where it comes from: image, Gaudi software, Python, then packages. */
      pins: StatedPin[];
      /** The vllm-gaudi release and Gaudi software of the compatibility matrix row. */
      row: Platform["row"];
      plugin: string;
      gates: string;
      /** Where install.sh records the verified pins inside the image. */
      stamp: string;
      /** Device runs of the recipe: none until one is recorded. */
      deviceRuns: string[];
    }
  | { state: "none"; why: string };

export function recipeSummary(manifest: RecipeManifest, platform: Platform = PLATFORM): RecipeSummary {
  if (manifest.reference === undefined) {
    return {
      state: "none",
      why: "the port has no engine model code yet, so there is no device plugin to install",
    };
  }
  const recipe = resolveRecipe(manifest, platform);
  return {
    state: "generated",
    build: [BUILD_WHEEL, dockerBuildCommand(recipe.port)],
    serve: serveCommandLine(recipe),
    env: recipe.env,
    pins: recipePins(recipe),
    row: platform.row,
    plugin: PLUGIN_DISTRIBUTION,
    gates: `TINY_MODEL=/path/to/tiny MODEL=/path/to/weights sh ${portInImage(recipe.port)}/tests/hpu/run_gates.sh`,
    stamp: pinsStampPath(recipe.port),
    deviceRuns: recipe.deviceRuns,
  };
}
