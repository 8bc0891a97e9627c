import { BringupError } from "../common/errors.js";
import { type BenchRecord, type BenchRecordInput, fingerprintDifferences, Z975 } from "../records/index.js";
import { measuredRecord, roundRatio } from "./record-builders.js";
import type { Interval } from "./stats.js";

const CHAINABLE = new Set(["same-pod-ab", "same-node-ab", "chained-ab"]);

export interface Chain {
  readonly interval: Interval;
  readonly cv: number;
  /** The arm names along the chain, first to last (A, B, C, ...). */
  readonly path: readonly string[];
}

/**
 * Composes A/B records that share arms (A/B, then B/C, ...) into the ratio of the last arm over the
 * first. Ratios multiply; each interval is read as a normal interval of the log ratio and their
 * half-widths add in quadrature (the records are independent measurements), as do their CVs.
 */
export function composeChain(records: readonly BenchRecord[]): Chain {
  if (records.length < 2) {
    throw new BringupError("CHAIN_TOO_SHORT", "a chain composes at least two A/B records; name two or more.");
  }
  const first = records[0] as BenchRecord;
  const path: string[] = [];
  let logRatio = 0;
  let logVariance = 0;
  let cvSquares = 0;
  for (const [index, record] of records.entries()) {
    if (!CHAINABLE.has(record.method) || !record.comparison || record.comparison.figure.shape !== "point") {
      throw new BringupError(
        "CHAIN_RECORD_NOT_AB",
        `${record.id} is a ${record.method} record without a measured ratio; chain only same-pod-ab, same-node-ab or chained-ab records.`,
        { subject: record.id },
      );
    }
    if (!record.comparison.ci95) {
      throw new BringupError(
        "CHAIN_NO_INTERVAL",
        `${record.id} states no 95% interval, so none can be composed.`,
        {
          subject: record.id,
        },
      );
    }
    if (
      record.metric !== first.metric ||
      record.unit !== first.unit ||
      record.comparison.better !== first.comparison?.better
    ) {
      throw new BringupError(
        "CHAIN_METRIC_MISMATCH",
        `${record.id} measures ${record.metric} (${record.unit}) but ${first.id} measures ${first.metric} (${first.unit}); chain records of one metric.`,
        { subject: record.id },
      );
    }
    const [armA, armB] = [record.arms[0], record.arms.at(-1)];
    if (!armA || !armB || record.arms.length !== 2) {
      throw new BringupError("CHAIN_RECORD_NOT_AB", `${record.id} does not have exactly two arms.`, {
        subject: record.id,
      });
    }
    if (index === 0) {
      path.push(armA.name);
    } else {
      const previous = records[index - 1] as BenchRecord;
      const shared = previous.arms.at(-1);
      if (shared?.name !== armA.name) {
        throw new BringupError(
          "CHAIN_NO_SHARED_ARM",
          `${previous.id} ends with arm "${shared?.name}" but ${record.id} starts with "${armA.name}"; order the records so each starts where the last ended.`,
          { subject: record.id },
        );
      }
      if (shared.fingerprint === undefined || armA.fingerprint === undefined) {
        throw new BringupError(
          "CHAIN_NO_FINGERPRINT",
          `arm "${armA.name}" has no fingerprint in ${shared.fingerprint === undefined ? previous.id : record.id}, so nothing shows it is one arm in both records; chain only measured A/Bs.`,
          { subject: record.id },
        );
      }
      const differences = fingerprintDifferences(shared.fingerprint, armA.fingerprint).filter(
        (field) => field !== "tool_version",
      );
      if (differences.length > 0) {
        throw new BringupError(
          "CHAIN_SHARED_ARM_DIFFERS",
          `arm "${armA.name}" is not the same in ${previous.id} and ${record.id}: its fingerprints differ in ${differences.join(", ")}; a chain needs one shared arm.`,
          { subject: record.id },
        );
      }
    }
    path.push(armB.name);
    const [low, high] = record.comparison.ci95;
    const ratio = record.comparison.figure.value;
    if (!(ratio > 0 && low > 0 && high >= low)) {
      throw new BringupError(
        "CHAIN_RATIO_INVALID",
        `${record.id} has a ratio or interval that is not positive.`,
        {
          subject: record.id,
        },
      );
    }
    logRatio += Math.log(ratio);
    const halfWidth = (Math.log(high) - Math.log(low)) / 2;
    logVariance += (halfWidth / Z975) ** 2;
    cvSquares += (record.comparison.cv ?? 0) ** 2;
  }
  const spread = Z975 * Math.sqrt(logVariance);
  return {
    interval: {
      estimate: Math.exp(logRatio),
      low: Math.exp(logRatio - spread),
      high: Math.exp(logRatio + spread),
    },
    cv: Math.sqrt(cvSquares),
    path,
  };
}

/** The chained-ab record of a chain: the first record's first arm against the last record's last arm. */
export function chainRecord(
  records: readonly BenchRecord[],
  options: { port: string; id: string; command?: string },
): BenchRecordInput {
  const chain = composeChain(records);
  const first = records[0] as BenchRecord;
  const last = records.at(-1) as BenchRecord;
  const start = first.arms[0];
  const end = last.arms.at(-1);
  if (!start?.fingerprint || !end?.fingerprint) {
    throw new BringupError("CHAIN_NO_FINGERPRINT", "the chain's end arms need fingerprints to be recorded.");
  }
  return measuredRecord({
    port: options.port,
    id: options.id,
    metric: first.metric,
    label: `${first.label.replace(/, [^,]* against [^,]*$/, "")}, ${end.name} against ${start.name} (chained)`,
    unit: first.unit,
    method: "chained-ab",
    context: `chained through ${chain.path.join(" > ")}`,
    ...(options.command ? { command: options.command } : {}),
    arms: [
      { name: start.name, samples: start.samples, fingerprint: start.fingerprint },
      { name: end.name, samples: end.samples, fingerprint: end.fingerprint },
    ],
    comparison: {
      figure: { shape: "point", value: roundRatio(chain.interval.estimate) },
      ci95: [roundRatio(chain.interval.low), roundRatio(chain.interval.high)],
      cv: roundRatio(chain.cv),
      better: first.comparison?.better ?? "higher",
    },
    chainedFrom: records.map((r) => r.id),
  });
}
