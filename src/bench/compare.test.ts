import { describe, expect, it } from "vitest";
import { BenchRecord } from "../records/index.js";
import { compareRecords, differentConditionsRecord } from "./compare.js";

function single(id: string, samples: number[], fingerprint: Record<string, unknown>): BenchRecord {
  return BenchRecord.parse({
    schema: "bringup.record/1",
    id: `demo/${id}`,
    port: "demo",
    metric: "output_throughput",
    label: "aggregate output tokens per second",
    unit: "tok/s",
    method: "single-run",
    source: { kind: "measured", tool: "bringup 0.1.0" },
    arms: [{ name: "run", samples, fingerprint }],
    recorded_at: "2026-12-02T10:00:00.000Z",
  });
}

describe("compareRecords", () => {
  const a = single("a", [100, 100], { host: "h1", software: { vllm: "0.10.0" }, workload_hash: "w" });
  const b = single("b", [150, 150], { host: "h2", software: { vllm: "0.11.0" }, workload_hash: "w" });
  const c = single("c", [120], { host: "h1", software: { vllm: "0.10.0" }, workload_hash: "w" });

  it("compares records with matching fingerprints", () => {
    expect(compareRecords(a, c).ratio).toBeCloseTo(1.2, 9);
  });

  it("refuses different fingerprints without different-conditions, naming what differs", () => {
    expect(() => compareRecords(a, b)).toThrow(/different conditions \(host, software\.vllm\)/);
    const comparison = compareRecords(a, b, { method: "different-conditions" });
    expect(comparison.ratio).toBeCloseTo(1.5, 9);
    expect(comparison.conditions).toEqual([
      { name: "host", a: "h1", b: "h2" },
      { name: "software.vllm", a: "0.10.0", b: "0.11.0" },
    ]);
    const record = BenchRecord.parse(
      differentConditionsRecord(a, b, comparison, { port: "demo", id: "a-vs-b" }),
    );
    expect(record.method).toBe("different-conditions");
    expect(record.conditions?.map((c) => c.name)).toEqual(["host", "software.vllm"]);
  });
});
