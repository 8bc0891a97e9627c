import { describe, expect, it } from "vitest";
import { BenchRecord } from "../records/index.js";
import { abRecordChart, portCharts, seriesChart } from "./charts.js";

function ab(id: string, ratio: number, ci95: [number, number]): BenchRecord {
  return BenchRecord.parse({
    schema: "bringup.record/1",
    id,
    port: "demo",
    metric: "decode_tok_s",
    label: "decode",
    unit: "tok/s",
    method: "same-pod-ab",
    source: { kind: "measured", tool: "bringup up" },
    arms: [
      { name: "full KV layout", samples: [10, 11, 12, 13] },
      { name: "window-sized KV layout", samples: [14, 15, 16, 17] },
    ],
    comparison: { figure: { shape: "point", value: ratio }, ci95, better: "higher" },
    recorded_at: "2026-01-01T00:00:00Z",
  });
}

describe("site charts", () => {
  it("draws every trial of each arm and the ratio with its interval, naming the record", async () => {
    const chart = await abRecordChart(ab("demo/ab", 1.3, [1.1, 1.5]));
    expect(chart).toMatchObject({ file: "demo/ab.svg", record: "demo/ab", method: "same-pod-ab" });
    expect(chart.svg).toMatch(/^<svg/);
    // Eight trial dots, the ratio's dot and the legend's two.
    expect(chart.svg.match(/<path transform="translate\([^)]*\)" d="M[0-9.]+,0A/g)?.length).toBe(11);
    expect(chart.svg).toContain("full KV layout");
  });

  it("charts a series only when it has several measured runs, naming its latest", async () => {
    const runs = [ab("demo/ab", 1.3, [1.1, 1.5]), ab("demo/ab.2", 0.9, [0.7, 1.2])];
    expect(await seriesChart(runs.slice(0, 1), "demo/ab")).toBeUndefined();
    expect(await seriesChart(runs, "demo/ab")).toMatchObject({
      file: "demo/ab.runs.svg",
      record: "demo/ab.2",
    });
    const reported = BenchRecord.parse({
      ...ab("demo/rep", 2, [1.9, 2.1]),
      source: { kind: "reported", where: "x", stated_method: "y" },
    });
    expect((await portCharts([...runs, reported], ["demo/ab"])).map((chart) => chart.file)).toEqual([
      "demo/ab.svg",
      "demo/ab.2.svg",
      "demo/ab.runs.svg",
    ]);
  });
});
