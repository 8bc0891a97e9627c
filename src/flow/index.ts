/**
 * The one flow that joins the stages: `bringUp` takes a port from its manifest to a built page.
 * Tiny reference weights (cached) -> embedded servers (the build, the baseline, the retrieval
 * variant) or an outside endpoint -> the reference section's gates -> a throughput-latency sweep of
 * the build against the baseline (embedded only) -> its A/Bs (same-pod, the one
 * server restarted per arm) -> records in the port's local store (.bringup/results/<id>/, published
 * into ports/<id>/results/ only by `bringup records publish`) -> the site. Every server stops,
 * also on failure or abort; what was recorded stays.
 *
 *   const summary = await bringUp({ root, port: "mimo-v2.6-flash", onStage, onProgress, signal });
 *   summary.gates;     // each gate passed / failed / not-run, with its one-line summary and record
 *   summary.figures;   // each figure with its method (and interval, for an A/B)
 *   summary.sweep;     // each point of the sweep: arm, concurrency, output tok/s, median TTFT and TPOT
 *   summary.page;      // the port's built page
 */
export { AB_WORKLOAD_SEED } from "./ab-stage.js";
export { bringUp } from "./bring-up.js";
export type { BringUpOptions } from "./bring-up-options.js";
export { DEFAULT_PORT } from "./default-port.js";
export {
  DEVICE_BLOCKS_DECODE,
  DEVICE_BLOCKS_FORMAT,
  DEVICE_BLOCKS_TOKENS,
  type DeviceBlocksOptions,
  type DeviceBlocksResult,
  deviceBlocks,
} from "./device-blocks.js";
export {
  type DeviceBlocksCheckOptions,
  type DeviceBlocksCheckResult,
  deviceBlocksCheck,
} from "./device-blocks-check.js";
export {
  type DeviceCheckOptions,
  type DeviceCheckResult,
  defaultDevicePython,
  deviceCheck,
} from "./device-check.js";
export { type CachedModel, cachedModel, cacheKey } from "./model-cache.js";
export { nextSeriesId } from "./record-ids.js";
export {
  type BringUpSummary,
  type FigureSummary,
  type GateSummary,
  gatesPassed,
  type ProgressEvent,
  type SkippedBenchmark,
  STAGES,
  type StageEvent,
  type StageName,
  type StageStatus,
  type StageTiming,
} from "./summary.js";
export { cachedTinyModel, REFERENCE_SEED } from "./tiny-model.js";
