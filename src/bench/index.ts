/**
 * Benchmarks of OpenAI-compatible endpoints with provenance: seeded workloads, a load generator
 * (fixed concurrency or open-loop gamma arrivals, latency from the scheduled send time), vLLM's
 * serving metrics, interleaved A/B designs with paired bootstrap intervals, chained A/Bs, and the
 * comparability rule for records. Results go to a port's records as they are measured.
 */

export {
  type AbArm,
  type AbOptions,
  type AbResult,
  type ArmKey,
  abbaOrder,
  blockRatios,
  runAb,
  type Trial,
} from "./ab.js";
export { type Chain, chainRecord, composeChain } from "./chain.js";
export { abChartSvg, latencyChartSvg, sweepChartSvg, type VegaSpec, vegaSvg } from "./charts.js";
export { compareRecords, differentConditionsRecord, type RecordComparison } from "./compare.js";
export { arrivalOffsets, type LoadShape, runLoad } from "./load.js";
export {
  computeMetrics,
  interTokenLatencies,
  meetsSlos,
  outputTokens,
  PERCENTILE_METRICS,
  type PercentileMetric,
  type RequestLatency,
  type RunMetrics,
  requestLatency,
  type Slos,
  type TokenCheck,
} from "./metrics.js";
export { armFingerprint, measuredRecord, runId, slug } from "./record-builders.js";
export { abReportMarkdown, metricRows, type Row, runReportMarkdown } from "./report.js";
export { writeAbReportDir, writeRunReportDir } from "./report-dir.js";
export {
  type FailureReason,
  type RequestResult,
  type SendOptions,
  sendStreaming,
  type Target,
} from "./request.js";
export { DEFAULT_PERCENTILES, type RunOptions, type RunResult, runBench } from "./run.js";
export { runRecords } from "./run-records.js";
export {
  type BlockTrials,
  blockedRatioInterval,
  cv,
  type Interval,
  type Summary,
  seededRandom,
  summarize,
} from "./stats.js";
export {
  runSweep,
  type SweepArm,
  type SweepOptions,
  type SweepPoint,
  sweepId,
  sweepRecordId,
  sweepRecords,
} from "./sweep.js";
export { shellSwitch } from "./switch.js";
export { toolVersion } from "./tool-version.js";
export { TRIAL_METRICS, type TrialMetric, trialMetric } from "./trial-metric.js";
export {
  DEFAULT_TOKEN_RANGE,
  datasetWorkload,
  randomWorkload,
  sharedPrefixWorkload,
  type TokenRange,
  type Workload,
  type WorkloadRequest,
  workloadHash,
} from "./workload.js";
