import { portInImage } from "./dockerfile.js";
import { pinsStampPath } from "./install-script.js";
import { type MissingPin, missingPins, resolveRecipe } from "./pins.js";
import { serveCommandLine } from "./serve.js";
import type { RecipeManifest } from "./source.js";

/** What a port's page says about its recipe: how to build and serve it, or which pins it still lacks. */
export type RecipeSummary =
  | {
      state: "pinned";
      image: string;
      /** Run from the repository root. */
      build: string;
      /** Environment then interpreter and flags; MODEL is the reader's to set. */
      serve: string;
      env: [name: string, value: string][];
      /** Pinned package versions, the Gaudi plugin, torch, vllm and vllm-gaudi first. */
      packages: { name: string; version: string }[];
      gaudiSoftware: string;
      python: string;
      gates: string;
      /** Where install.sh records the verified pins inside the image. */
      stamp: string;
      /** Where the Dockerfile puts the port inside the image. */
      portInImage: string;
    }
  | { state: "unpinned"; missing: MissingPin[] };

export function recipeSummary(manifest: RecipeManifest): RecipeSummary {
  const missing = missingPins(manifest);
  if (missing.length > 0) return { state: "unpinned", missing };
  const recipe = resolveRecipe(manifest);
  return {
    state: "pinned",
    image: recipe.image,
    build: `docker build -f ports/${recipe.port}/recipe/Dockerfile -t bringup/${recipe.port} .`,
    serve: serveCommandLine(recipe),
    env: recipe.env,
    packages: recipe.packages.map(({ name, version }) => ({ name, version })),
    gaudiSoftware: `${recipe.gaudiVersion}-${recipe.gaudiBuild}`,
    python: recipe.python,
    gates: `MODEL=/path/to/weights sh ${portInImage(recipe.port)}/tests/hpu/run_gates.sh`,
    stamp: pinsStampPath(recipe.port),
    portInImage: portInImage(recipe.port),
  };
}
