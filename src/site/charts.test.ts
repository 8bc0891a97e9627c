import { describe, expect, it } from "vitest";
import { BenchRecord } from "../records/index.js";
import { abRecordChart, portCharts, seriesChart } from "./charts.js";

function ab(id: string, ratio: number, ci95: [number, number], server = "bringup"): BenchRecord {
  const fingerprint = { host: "h", software: { [server]: "1", model: "tiny" } };
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
      { name: "full KV layout", samples: [10, 11, 12, 13], fingerprint },
      { name: "window-sized KV layout", samples: [14, 15, 16, 17], fingerprint },
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
    // No wider than a phone's column shrinks to readable text (see the series chart's test).
    expect(Number(chart.svg.match(/^<svg[^>]* width="([0-9]+)"/)?.[1])).toBeLessThanOrEqual(460);
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

  it("draws the ratio pooled across runs and marks where each run ran and which are unpublished", async () => {
    const runs = [
      ab("demo/ab", 1.3, [1.1, 1.5]),
      ab("demo/ab.2", 0.9, [0.7, 1.2], "vllm"),
      ab("demo/ab.3", 1.2, [1.0, 1.4]),
    ];
    const chart = await seriesChart(runs, "demo/ab", new Set(["demo/ab.3"]));
    const svg = chart?.svg ?? "";
    for (const label of ["1", "2", "3, local", "pooled", "bringup's CPU engine", "vLLM or device endpoint"])
      expect(svg).toContain(`>${label}<`);
    // Text a phone can read once the chart is shrunk to its column (about 340 px of 460).
    expect(Number(svg.match(/^<svg[^>]* width="([0-9]+)"/)?.[1])).toBeLessThanOrEqual(460);
    const sizes = [...svg.matchAll(/font-size="([0-9.]+)px"/g)].map((m) => Number(m[1]));
    expect(sizes.length).toBeGreaterThan(0);
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(13);
  });
});
