import { describe, expect, it } from "vitest";
import { BenchRecord } from "../records/index.js";
import { sweepCharts } from "./sweep-chart.js";

function point(arm: string, concurrency: number, metric: string, samples: number[]): BenchRecord {
  return BenchRecord.parse({
    schema: "bringup.record/1",
    id: `demo/sweep-20261204-060001-${arm.split(" ")[0]}-c${concurrency}-${metric}`,
    port: "demo",
    metric: metric.replace(/-/g, "_"),
    label: metric,
    unit: metric === "output-throughput" ? "tok/s" : "ms",
    method: "single-run",
    context: `${arm}, random-64-16, ${concurrency} requests at concurrency ${concurrency}, both arms in one sweep`,
    source: { kind: "measured", tool: "bringup 0.1.0" },
    arms: [{ name: "run", samples, fingerprint: { host: "h", software: { bringup: "0.1.0" } } }],
    recorded_at: "2026-12-04T06:00:01Z",
  });
}

describe("the sweep chart", () => {
  it("draws output tok/s against median TTFT and TPOT per arm and concurrency, naming a record", async () => {
    const records = ["full KV layout", "window-sized KV layout"].flatMap((arm, a) =>
      [1, 2, 4].flatMap((c) => [
        point(arm, c, "output-throughput", [10 * c + a]),
        point(arm, c, "ttft-ms", [100 * c, 120 * c]),
        point(arm, c, "tpot-ms", [20 + c, 22 + c]),
      ]),
    );
    const [chart, ...more] = await sweepCharts(records);
    expect(more).toHaveLength(0);
    expect(chart).toMatchObject({
      file: "demo/sweep-20261204-060001.sweep.svg",
      record: "demo/sweep-20261204-060001-full-c1-output-throughput",
      method: "single-run",
    });
    const svg = chart?.svg ?? "";
    for (const label of ["full KV layout", "window-sized KV layout", "c1", "c4", "output tok/s"])
      expect(svg).toContain(`>${label}<`);
    // Two lines per arm (one per panel).
    expect(svg.match(/class="mark-line role-mark"/g)?.length).toBe(4);
    expect(Number(svg.match(/^<svg[^>]* width="([0-9]+)"/)?.[1])).toBeLessThanOrEqual(460);
    expect(await sweepCharts(records.filter((r) => !r.id.includes("ttft")))).toEqual([]);
    // A sweep of a local run says it is not published.
    const [local] = await sweepCharts(records, new Set(records.map((r) => r.id)));
    expect(local?.caption).toContain("sweep demo/sweep-20261204-060001 (local run, not published)");
    expect(local?.svg).toContain("sweep-20261204-060001 (local run, not published)<");
    expect(chart?.caption).not.toContain("local");
  });
});
