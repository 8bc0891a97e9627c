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

  it("compares the medians of the samples, the figures `records show` and the site state", () => {
    const slowTrial = single("d", [110, 120, 400], {
      host: "h1",
      software: { vllm: "0.10.0" },
      workload_hash: "w",
    });
    const comparison = compareRecords(a, slowTrial);
    expect(comparison.second.value).toBe(120);
    expect(comparison.ratio).toBeCloseTo(1.2, 9);
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

  it("refuses a record without a fingerprint (a reported figure) unless different-conditions", () => {
    const reported = BenchRecord.parse({
      schema: "bringup.record/1",
      id: "demo/reported",
      port: "demo",
      metric: "output_throughput",
      label: "aggregate output tokens per second",
      unit: "tok/s",
      method: "same-pod-ab",
      source: { kind: "reported", where: "a vendor blog", stated_method: "same pod" },
      arms: [
        { name: "stock", figure: { shape: "point", value: 17.9 } },
        { name: "kernels", figure: { shape: "point", value: 44.5 } },
      ],
      recorded_at: "2026-12-02T10:00:00.000Z",
    });
    expect(() => compareRecords(reported, a)).toThrow(
      /demo\/reported has no fingerprint \(a figure reported by a vendor blog\)/,
    );
    expect(() => compareRecords(reported, reported)).toThrow(/no fingerprint/);
    const named = compareRecords(reported, a, { method: "different-conditions" });
    expect(named.conditions).toEqual([{ name: "fingerprint", a: "none recorded", b: "recorded" }]);
  });

  it("tells two machines apart by CPU, cores, memory and OS", () => {
    const on = (cores: number) =>
      single(`m${cores}`, [100], {
        host: "h1",
        machine: { cpu: "Xeon", cores, memory_gib: 16, os: "Linux 6.1" },
        workload_hash: "w",
      });
    expect(() => compareRecords(on(2), on(2))).not.toThrow();
    expect(() => compareRecords(on(2), on(4))).toThrow(/different conditions \(machine\.cores\)/);
  });
});
