import type { Gate as GateSpec } from "../catalog/index.js";
import {
  appendRecord,
  type BenchRecord,
  type BenchRecordInput,
  fingerprintDifferences,
} from "../records/index.js";
import type { GateContext, GateOutcome } from "./gate.js";

/**
 * The record of a gate that ran: method `same-pod-ab` when a reference endpoint on the same host
 * was measured in this session, `different-conditions` when it was on another host, else
 * `single-run`. A gate that did not run measured nothing and gets no record.
 */
export function gateRecord(
  port: string,
  spec: GateSpec,
  outcome: GateOutcome,
  context: GateContext,
  recordedAt: Date = new Date(),
  /** The gate's place in the run, so two gates of one kind recorded in the same millisecond differ. */
  ordinal = 0,
): BenchRecordInput | undefined {
  if (outcome.status === "not-run" || !outcome.arms || !outcome.metric || !outcome.unit || !outcome.label)
    return undefined;
  const stamp = recordedAt.toISOString().replace(/[-:.]/g, "").toLowerCase();
  const fingerprintOf = (reference: boolean) =>
    (reference ? context.reference : context.endpoint)?.probe.fingerprint;
  const arms = outcome.arms.map((arm) => {
    const fingerprint = fingerprintOf(arm.reference);
    return { name: arm.name, samples: [...arm.samples], ...(fingerprint ? { fingerprint } : {}) };
  });
  const compared = outcome.arms.some((a) => a.reference);
  const differences = compared
    ? fingerprintDifferences(fingerprintOf(false), fingerprintOf(true)).filter(
        (f) => f === "host" || f === "hardware",
      )
    : [];
  const method = !compared ? "single-run" : differences.length === 0 ? "same-pod-ab" : "different-conditions";
  const conditions = differences.map((name) => ({
    name,
    a: String(fingerprintOf(false)?.[name as "host"] ?? "unknown"),
    b: String(fingerprintOf(true)?.[name as "host"] ?? "unknown"),
  }));
  return {
    schema: "bringup.record/1",
    id: `${port}/gate-${outcome.kind}-${stamp}-${ordinal}`,
    port,
    metric: outcome.metric,
    label: `${outcome.label}: gate ${outcome.status}`,
    unit: outcome.unit,
    method,
    ...(conditions.length > 0 ? { conditions } : {}),
    context: outcome.summary,
    source: { kind: "measured", tool: "bringup gate", command: `bringup gate ${port} --only ${spec.kind}` },
    arms,
    recorded_at: recordedAt.toISOString(),
  };
}

/** Appends a record for each gate that ran to the port's results directory; returns what was written. */
export async function appendGateRecords(
  resultsDir: string,
  port: string,
  results: readonly { spec: GateSpec; outcome: GateOutcome }[],
  context: GateContext,
): Promise<BenchRecord[]> {
  const written: BenchRecord[] = [];
  const recordedAt = new Date();
  for (const [i, { spec, outcome }] of results.entries()) {
    const record = gateRecord(port, spec, outcome, context, recordedAt, i);
    if (record) written.push(await appendRecord(resultsDir, record));
  }
  return written;
}
