import type { BenchRecord } from "./record.js";

/** Where a record's figure comes from: bringup's embedded CPU engine, another server, or elsewhere. */
export type RunTarget = "cpu-engine" | "endpoint" | "reported";

/** The words the pages and charts use for each target. */
export const RUN_TARGET_LABELS: Record<RunTarget, string> = {
  "cpu-engine": "local, bringup's CPU engine",
  endpoint: "served endpoint (vLLM, device)",
  reported: "reported, not measured here",
};

/** Fingerprint software entries that name no server: the served model and the Node.js runtime. */
const NOT_A_SERVER = new Set(["model", "node"]);

/**
 * A measured record is a run on bringup's embedded CPU engine when no arm states a hardware
 * accelerator and no arm's software names a server other than bringup's (the probe records the
 * server's name and version; an in-process bench or a checkpoint comparison names none). A record
 * measured against any other server (vLLM, vllm-gaudi on a device) is an endpoint run.
 */
export function runTarget(record: BenchRecord): RunTarget {
  if (record.source.kind === "reported") return "reported";
  const other = record.arms.some(
    (arm) =>
      arm.fingerprint?.hardware !== undefined ||
      Object.keys(arm.fingerprint?.software ?? {}).some(
        (name) => name !== "bringup" && !NOT_A_SERVER.has(name),
      ),
  );
  return other ? "endpoint" : "cpu-engine";
}
