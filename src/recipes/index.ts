export { dockerBuildCommand, portInImage, renderDockerfile } from "./dockerfile.js";
export { PLATFORM_FINDINGS, type PlatformFinding, type Source } from "./findings.js";
export { generateRecipe, RECIPE_PATHS, type RecipeFile, recipeProblems, writeRecipe } from "./generate.js";
export {
  BUILD_WHEEL,
  PLUGIN_DISTRIBUTION,
  pinsStamp,
  pinsStampPath,
  renderInstallScript,
  sitePackageDirs,
} from "./install-script.js";
export { recipePins, resolveRecipe } from "./pins.js";
export {
  describeOrigin,
  type PackagePin,
  type Pin,
  type PinOrigin,
  PLATFORM,
  type Platform,
  type VersionMatch,
} from "./platform.js";
export {
  blocksCheckCommand,
  DEVICE_GATE,
  NOT_SERVED_EXIT,
  renderRunGatesScript,
} from "./run-gates-script.js";
export { modeEnv, serveArgs, serveCommandLine, serveEnv, VLLM_SERVER_MODULE } from "./serve.js";
export { shellQuote, shellWord } from "./shell.js";
export {
  normalizePackageName,
  type PinnedPackage,
  type Recipe,
  type RecipeManifest,
  type StatedPin,
} from "./source.js";
export { type RecipeDevice, type RecipeSummary, recipeSummary } from "./summary.js";
