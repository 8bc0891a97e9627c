export { portInImage, renderDockerfile } from "./dockerfile.js";
export { generateRecipe, RECIPE_PATHS, type RecipeFile, recipeProblems, writeRecipe } from "./generate.js";
export { pinsStamp, pinsStampPath, renderInstallScript, sitePackageDirs } from "./install-script.js";
export { describeMissingPins, type MissingPin, missingPins, PIN_SOURCES, resolveRecipe } from "./pins.js";
export { renderRunGatesScript } from "./run-gates-script.js";
export { modeEnv, serveArgs, serveCommandLine, serveEnv, VLLM_SERVER_MODULE } from "./serve.js";
export { shellQuote, shellWord } from "./shell.js";
export { normalizePackageName, type PinnedPackage, type Recipe, type RecipeManifest } from "./source.js";
export { type RecipeSummary, recipeSummary } from "./summary.js";
