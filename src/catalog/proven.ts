import { DEVICE_GATE, PLATFORM } from "../recipes/index.js";
import type { BenchRecord } from "../records/index.js";
import { inReferenceSeries, referenceSeries } from "./check.js";
import type { LoadedPort } from "./load.js";

/**
 * What this repository proves about a port, level by level, beside the Ports page's claim
 * (`status.state`, "production", which is about device runs made elsewhere). Each level holds only
 * through records a reader can open.
 */
export const PROOF_LEVELS = ["engine", "vllm-cpu", "blocks", "device"] as const;
export type ProofLevel = (typeof PROOF_LEVELS)[number];

export const PROOF_LEVEL_NAMES: Record<ProofLevel, string> = {
  engine: "runs on the reference engine with its gates passing",
  "vllm-cpu": "device code served by vLLM on the CPU and matching the reference engine",
  blocks: "device code not served by vLLM, its blocks checked one by one against the reference engine",
  device: "recipe run on a device",
};

/**
 * `passed`: every gate of the level has a latest record and each passed. `failed`: one's latest
 * record failed. `partial`: some gates have no record yet. `none`: no record at all. `not-applicable`:
 * the port has no engine model code, so no level can be reached.
 */
export type ProofState = "passed" | "failed" | "partial" | "none" | "not-applicable";

export interface Proof {
  level: ProofLevel;
  state: ProofState;
  /** The records the state rests on, latest per gate. */
  records: BenchRecord[];
}

/** The latest record of a series: the highest run (`<series>.<n>`), the series id itself being run 1. */
export function latestInSeries(records: readonly BenchRecord[], series: string): BenchRecord | undefined {
  let latest: BenchRecord | undefined;
  let highest = 0;
  for (const record of records) {
    if (!inReferenceSeries(record.id, series)) continue;
    const run = record.id === series ? 1 : Number(record.id.slice(series.length + 1));
    if (run > highest) {
      highest = run;
      latest = record;
    }
  }
  return latest;
}

/** Whether a gate record says it passed (its label ends `: gate passed`, as gate records are labelled). */
export function gatePassed(record: BenchRecord): boolean {
  return record.label.endsWith(": gate passed");
}

/** The state of a level from the latest record of each of its gates (undefined: not measured yet). */
function stateOf(latest: readonly (BenchRecord | undefined)[]): ProofState {
  const present = latest.filter((record) => record !== undefined);
  if (present.length === 0) return "none";
  if (present.some((record) => !gatePassed(record))) return "failed";
  return present.length === latest.length ? "passed" : "partial";
}

/**
 * Records of the device-vs-reference gate: the series `<port>/device-logprobs` (the device check's
 * runs) and what `bringup gate --only device-logprobs` writes (`<port>/gate-device-logprobs-...`),
 * oldest first.
 */
function deviceGateRecords(port: LoadedPort): BenchRecord[] {
  const series = `${port.id}/${DEVICE_GATE}`;
  const prefix = `${port.id}/gate-${DEVICE_GATE}-`;
  return port.records
    .filter((record) => inReferenceSeries(record.id, series) || record.id.startsWith(prefix))
    .sort((a, b) => (a.recorded_at < b.recorded_at ? -1 : a.recorded_at > b.recorded_at ? 1 : 0));
}

/**
 * Each level of proof for a port; `deviceRuns` are the device runs the platform pins record, by
 * port. The `blocks` level is there only for a port that declares `reference.device_blocks`.
 */
export function provenLevels(
  port: LoadedPort,
  deviceRuns: Record<string, string[]> = PLATFORM.deviceRuns,
): Proof[] {
  if (port.manifest.reference === undefined) {
    return PROOF_LEVELS.map((level) => ({ level, state: "not-applicable", records: [] }));
  }
  const engine = referenceSeries(port.manifest).gates.map((series) => latestInSeries(port.records, series));
  const cpu = deviceGateRecords(port).at(-1);
  const device = (deviceRuns[port.id] ?? []).map((id) => port.records.find((record) => record.id === id));
  const blocksSeries = port.manifest.reference.device_blocks?.record;
  const blocks = blocksSeries === undefined ? undefined : latestInSeries(port.records, blocksSeries);
  return [
    { level: "engine", state: stateOf(engine), records: engine.filter((r) => r !== undefined) },
    {
      level: "vllm-cpu",
      state: stateOf(cpu === undefined ? [] : [cpu]),
      records: cpu === undefined ? [] : [cpu],
    },
    ...(blocksSeries === undefined
      ? []
      : [{ level: "blocks" as const, state: stateOf([blocks]), records: blocks ? [blocks] : [] }]),
    { level: "device", state: stateOf(device), records: device.filter((r) => r !== undefined) },
  ];
}

/** One line for a terminal: `engine passed, vllm-cpu none, device none`. */
export function provenSummary(proofs: readonly Proof[]): string {
  if (proofs.every((proof) => proof.state === "not-applicable")) return "no engine model code";
  return proofs.map((proof) => `${proof.level} ${proof.state}`).join(", ");
}
