export {
  Fingerprint,
  fingerprintDifferences,
  fingerprintField,
  localMachine,
  localServerFingerprint,
  Machine,
} from "./fingerprint.js";
export {
  type AbVerdict,
  abVerdict,
  NOISY_INTERVAL_SPAN,
  showsNoDifference,
  verdictWords,
} from "./interval.js";
export { figureNumbers, recordNumbers } from "./numbers.js";
export { type PooledRatio, pooledRatio, type RunRatio } from "./pooled.js";
export { formatProblem, type IssueContext, issueProblems, type Path, type Problem } from "./problems.js";
export { type PublishOptions, type PublishPlan, publishRecords } from "./publish.js";
export {
  Arm,
  BenchRecord,
  type BenchRecordInput,
  Comparison,
  Condition,
  Figure,
  METHOD_DESCRIPTIONS,
  METHODS,
  Method,
  RECORD_SCHEMA_VERSION,
  Source,
  UNITS,
  Unit,
} from "./record.js";
export { RUN_TARGET_LABELS, type RunTarget, runTarget } from "./run-target.js";
export {
  appendRecord,
  inspectRecords,
  type ParsedRecords,
  parseRecords,
  RECORDS_FILE,
  type RecordLocation,
  readRecords,
  type StoreContents,
} from "./store.js";
export { studentT975, Z975 } from "./student-t.js";
