import { median } from "simple-statistics";
import { BringupError } from "../common/errors.js";
import {
  type Arm,
  type BenchRecord,
  type BenchRecordInput,
  fingerprintDifferences,
  fingerprintField,
} from "../records/index.js";
import { measuredRecord, roundRatio } from "./record-builders.js";

export interface RecordComparison {
  /** The second record's figure over the first's (inverted when lower is better: above 1, the second is better). */
  readonly ratio: number;
  readonly first: { readonly id: string; readonly arm: string; readonly value: number };
  readonly second: { readonly id: string; readonly arm: string; readonly value: number };
  /** Each fingerprint field that differs, by name, with both values. */
  readonly conditions: readonly { name: string; a: string; b: string }[];
}

/**
 * Compares the figures of two records. Records whose arms' fingerprints differ are refused unless
 * the caller states the method `different-conditions`; then every difference is named.
 */
export function compareRecords(
  first: BenchRecord,
  second: BenchRecord,
  options: {
    method?: "different-conditions";
    firstArm?: string;
    secondArm?: string;
    better?: "higher" | "lower";
  } = {},
): RecordComparison {
  if (first.metric !== second.metric || first.unit !== second.unit) {
    throw new BringupError(
      "RECORDS_DIFFERENT_METRICS",
      `${first.id} measures ${first.metric} (${first.unit}) and ${second.id} measures ${second.metric} (${second.unit}); compare records of one metric.`,
      { subject: second.id },
    );
  }
  const armA = pickArm(first, options.firstArm);
  const armB = pickArm(second, options.secondArm);
  const differences = fingerprintDifferences(armA.fingerprint, armB.fingerprint);
  if (differences.includes("fingerprint") && options.method !== "different-conditions") {
    const bare = armA.fingerprint === undefined ? first : second;
    throw new BringupError(
      "RECORDS_NO_FINGERPRINT",
      `${bare.id} has no fingerprint${bare.source.kind === "reported" ? ` (a figure reported by ${bare.source.where})` : ""}, so nothing shows that ${first.id} and ${second.id} were measured under the same conditions; compare them only as --method different-conditions.`,
      { subject: bare.id },
    );
  }
  if (differences.length > 0 && options.method !== "different-conditions") {
    throw new BringupError(
      "RECORDS_NOT_COMPARABLE",
      `${first.id} and ${second.id} were measured under different conditions (${differences.join(", ")}); compare them only as --method different-conditions, which names each difference.`,
      { subject: second.id },
    );
  }
  const valueA = armValue(first, armA);
  const valueB = armValue(second, armB);
  const better =
    options.better ??
    first.comparison?.better ??
    (first.unit === "ms" || first.unit === "s" ? "lower" : "higher");
  return {
    ratio: better === "higher" ? valueB / valueA : valueA / valueB,
    first: { id: first.id, arm: armA.name, value: valueA },
    second: { id: second.id, arm: armB.name, value: valueB },
    conditions: differences.map((name) => ({
      name,
      a: fingerprintField(armA.fingerprint, name),
      b: fingerprintField(armB.fingerprint, name),
    })),
  };
}

/** The different-conditions record of a comparison (or, with matching fingerprints, nothing to name: refused). */
export function differentConditionsRecord(
  first: BenchRecord,
  second: BenchRecord,
  comparison: RecordComparison,
  options: { port: string; id: string; command?: string },
): BenchRecordInput {
  if (comparison.conditions.length === 0) {
    throw new BringupError(
      "RECORDS_SAME_CONDITIONS",
      `${first.id} and ${second.id} have matching fingerprints; measure them as an A/B (bringup bench ab) instead.`,
    );
  }
  const armA = pickArm(first, comparison.first.arm);
  const armB = pickArm(second, comparison.second.arm);
  return measuredRecord({
    port: options.port,
    id: options.id,
    metric: first.metric,
    label: `${first.label}, ${second.id} against ${first.id}`,
    unit: first.unit,
    method: "different-conditions",
    context: `records ${first.id} and ${second.id}`,
    ...(options.command ? { command: options.command } : {}),
    arms: [
      { name: `${first.id}:${armA.name}`, samples: armA.samples, fingerprint: armA.fingerprint ?? {} },
      { name: `${second.id}:${armB.name}`, samples: armB.samples, fingerprint: armB.fingerprint ?? {} },
    ],
    comparison: {
      figure: { shape: "point", value: roundRatio(comparison.ratio) },
      better: first.comparison?.better ?? (first.unit === "ms" || first.unit === "s" ? "lower" : "higher"),
    },
    conditions: comparison.conditions.map((c) => ({ name: c.name, a: c.a || "(none)", b: c.b || "(none)" })),
  });
}

function pickArm(record: BenchRecord, name: string | undefined): Arm {
  const arm = name === undefined ? record.arms.at(-1) : record.arms.find((a) => a.name === name);
  if (!arm) {
    throw new BringupError(
      "RECORD_ARM_NOT_FOUND",
      `${record.id} has no arm "${name}"; its arms are ${record.arms.map((a) => a.name).join(", ")}.`,
      { subject: record.id },
    );
  }
  return arm;
}

/**
 * An arm's figure as `records show` and the site state it: its stated point figure, else the median
 * of its samples (a mean would let one slow trial move the figure).
 */
function armValue(record: BenchRecord, arm: Arm): number {
  if (arm.figure?.shape === "point") return arm.figure.value;
  if (arm.samples.length > 0) return median(arm.samples);
  throw new BringupError(
    "RECORD_NO_VALUE",
    `arm "${arm.name}" of ${record.id} has no samples and no single stated figure to compare.`,
    { subject: record.id },
  );
}
