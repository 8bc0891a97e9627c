import { describe, expect, it } from "vitest";
import { abChartSvg, latencyChartSvg, sweepChartSvg } from "./charts.js";
import { computeMetrics } from "./metrics.js";

const metrics = computeMetrics(
  [
    {
      index: 0,
      ok: true,
      scheduledAt: 0,
      sentAt: 0,
      endAt: 90,
      chunkTimes: [30, 60, 90],
      chunkTokens: [1, 1, 1],
      text: "abc",
      usageTokens: 3,
      promptTokens: 4,
    },
    {
      index: 1,
      ok: true,
      scheduledAt: 0,
      sentAt: 0,
      endAt: 120,
      chunkTimes: [40, 80, 120],
      chunkTokens: [1, 1, 1],
      text: "abc",
      usageTokens: 3,
      promptTokens: 4,
    },
  ],
  { percentiles: [99] },
);

describe("charts", () => {
  it("renders standalone SVG for an A/B, a run and a sweep", async () => {
    const ab = await abChartSvg({
      ratios: [2.1, 2.3, 1.9],
      estimate: 2.1,
      low: 1.9,
      high: 2.3,
      title: "simd over plain",
    });
    expect(ab).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(ab).toContain("simd over plain");
    const dots = ab.slice(ab.indexOf("mark-symbol role-mark"));
    expect(dots.slice(0, dots.indexOf("</g>")).match(/<path/g)?.length).toBe(3);
    const run = await latencyChartSvg(metrics, "latency");
    expect(run).toContain("ttft");
    expect(run).toContain("p99");
    const sweep = await sweepChartSvg(
      [
        { load: "concurrency 1", metrics },
        { load: "concurrency 2", metrics },
      ],
      "sweep",
    );
    expect(sweep).toContain("concurrency 2");
  });
});
