import { dockerBuildCommand, portInImage } from "./dockerfile.js";
import { BUILD_WHEEL, PLUGIN_DISTRIBUTION, pinsStampPath } from "./install-script.js";
import { recipePins, resolveRecipe } from "./pins.js";
import { PLATFORM, type Platform } from "./platform.js";
import { blocksCheckCommand, NOT_SERVED_EXIT } from "./run-gates-script.js";
import { serveCommandLine } from "./serve.js";
import type { RecipeManifest, StatedPin } from "./source.js";

/** How the recipe's image meets the port's device code: vllm-gaudi serves it and the gates run, or not at all. */
export type RecipeDevice =
  | {
      kind: "served";
      /** Environment then interpreter and flags; MODEL is the reader's to set. */
      serve: string;
      /** run_gates.sh as run in the image: the tiny checkpoint against the reference engine, then MODEL. */
      gates: string;
    }
  | {
      /** vLLM does not serve it (reference.device_blocks): run_gates.sh checks the pins and exits `exit`. */
      kind: "not-served";
      why: string;
      exit: number;
      /** What checks the port's blocks one by one on the CPU instead, and its record series. */
      check: string;
      record: string;
    };

/** What a port's page says about its recipe: how to build, serve and gate it, and where each pin comes from. */
export type RecipeSummary =
  | {
      state: "generated";
      /** Run from the repository root, in order. */
      build: string[];
      device: RecipeDevice;
      env: [name: string, value: string][];
      /** Every pin with where it comes from: image, Gaudi software, Python, then packages. */
      pins: StatedPin[];
      /** The vllm-gaudi release and Gaudi software of the compatibility matrix row. */
      row: Platform["row"];
      plugin: string;
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
    device:
      recipe.notServed === undefined
        ? {
            kind: "served",
            serve: serveCommandLine(recipe),
            gates: `TINY_MODEL=/path/to/tiny MODEL=/path/to/weights sh ${portInImage(recipe.port)}/tests/hpu/run_gates.sh`,
          }
        : {
            kind: "not-served",
            why: recipe.notServed.why,
            exit: NOT_SERVED_EXIT,
            check: blocksCheckCommand(recipe.port),
            record: recipe.notServed.record,
          },
    env: recipe.env,
    pins: recipePins(recipe),
    row: platform.row,
    plugin: PLUGIN_DISTRIBUTION,
    stamp: pinsStampPath(recipe.port),
    deviceRuns: recipe.deviceRuns,
  };
}
