export * from "./build-schema.js";
export {
  abArmBuild,
  abArmNames,
  type Build,
  type BuildDefaults,
  buildKey,
  conversionKey,
  describeBuild,
  describeConversion,
  switchFlags,
} from "./builds.js";
export {
  type CatalogInspection,
  checkCatalog,
  type Diagnostic,
  type InspectedPort,
  inReferenceSeries,
  inspectCatalog,
  inspectPort,
  PORTS_DIR,
  referenceSeries,
  workloadSeries,
} from "./check.js";
export { FEATURE_IDS, FEATURES, type FeatureId, isFeatureId } from "./features.js";
export {
  type LayoutEntry,
  type LayoutKind,
  type LayoutStage,
  LOCAL_RESULTS_DIR,
  localResultsDir,
  MANIFEST_FILE,
  PORT_LAYOUT,
  PORTS_README,
  README_FILE,
  RESULTS_DIR,
} from "./layout.js";
export {
  type BrokenPort,
  brokenPortError,
  brokenPortsNotice,
  type Catalog,
  findPort,
  type LoadedPort,
  type LoadOptions,
  loadCatalog,
} from "./load.js";
export * from "./manifest.js";
export { type FigureRef, figureRefs, isBacked, type UnitFigure, unitFigures } from "./prose.js";
export {
  gatePassed,
  latestInSeries,
  PROOF_LEVEL_NAMES,
  PROOF_LEVELS,
  type Proof,
  type ProofLevel,
  type ProofState,
  provenLevels,
  provenSummary,
} from "./proven.js";
export { type ScaffoldOptions, scaffoldManifest, scaffoldPort } from "./scaffold.js";
