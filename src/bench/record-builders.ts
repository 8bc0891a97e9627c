import { BringupError } from "../common/errors.js";
import type { BenchRecordInput, Fingerprint, Method, Unit } from "../records/index.js";
import { toolVersion } from "./tool-version.js";

/** A run's id: a slug that sorts by time, e.g. bench-20261202-150512-ab. */
export function runId(kind: string, at: Date = new Date()): string {
  const stamp = at.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `bench-${stamp}-${kind}`;
}

/** A record-id slug from free words: lower case, runs of other characters become one dash. */
export function slug(text: string): string {
  const cleaned = text
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, "-")
    .replace(/\.{2,}/g, ".")
    .replace(/^[-.]+|[-.]+$/g, "");
  if (cleaned.length === 0) {
    throw new BringupError("BENCH_ID_INVALID", `"${text}" gives an empty record id; use letters or digits.`);
  }
  return cleaned;
}

/** The arm's fingerprint with what bench itself knows: the workload hash and the tool version. */
export function armFingerprint(base: Fingerprint | undefined, workloadHash: string): Fingerprint {
  return { ...base, workload_hash: workloadHash, tool_version: toolVersion() };
}

export interface MeasuredRecordParts {
  readonly port: string;
  readonly id: string;
  readonly metric: string;
  readonly label: string;
  readonly unit: Unit;
  readonly method: Method;
  readonly context: string;
  readonly command?: string;
  readonly arms: readonly { name: string; samples: readonly number[]; fingerprint: Fingerprint }[];
  readonly comparison?: BenchRecordInput["comparison"];
  readonly chainedFrom?: readonly string[];
  readonly conditions?: BenchRecordInput["conditions"];
}

export function measuredRecord(parts: MeasuredRecordParts): BenchRecordInput {
  return {
    schema: "bringup.record/1",
    id: `${parts.port}/${parts.id}`,
    port: parts.port,
    metric: parts.metric,
    label: parts.label,
    unit: parts.unit,
    method: parts.method,
    context: parts.context,
    source: { kind: "measured", tool: toolVersion(), ...(parts.command ? { command: parts.command } : {}) },
    arms: parts.arms.map((arm) => ({
      name: arm.name,
      samples: [...arm.samples],
      fingerprint: arm.fingerprint,
    })),
    ...(parts.comparison ? { comparison: parts.comparison } : {}),
    ...(parts.chainedFrom ? { chained_from: [...parts.chainedFrom] } : {}),
    ...(parts.conditions ? { conditions: parts.conditions } : {}),
    recorded_at: new Date().toISOString(),
  };
}

/** Rounds a ratio or bound for a record: 4 significant digits are more than any interval supports. */
export function roundRatio(value: number): number {
  return Number(value.toPrecision(4));
}
