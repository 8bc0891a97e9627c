import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { writeDirectoryAtomic } from "../common/atomic-write.js";
import type { AbResult } from "./ab.js";
import { abChartSvg, latencyChartSvg, sweepChartSvg } from "./charts.js";
import type { RunMetrics } from "./metrics.js";
import { abReportMarkdown, runReportMarkdown } from "./report.js";

/** A run's or sweep's report directory: report.md with a latency chart per load point, and a sweep chart. */
export async function writeRunReportDir(
  outDir: string,
  input: {
    title: string;
    endpoint: string;
    model: string;
    workload: string;
    command?: string;
    points: readonly { load: string; metrics: RunMetrics }[];
    percentileMetrics: readonly string[];
    recordIds: readonly string[];
  },
): Promise<void> {
  await writeDirectoryAtomic(outDir, async (dir) => {
    const charts: { file: string; caption: string }[] = [];
    for (const [index, point] of input.points.entries()) {
      const file = `latency-${index + 1}.svg`;
      const caption = `latency, ${point.load}`;
      await writeFile(join(dir, file), await latencyChartSvg(point.metrics, caption));
      charts.push({ file, caption });
    }
    if (input.points.length > 1) {
      await writeFile(join(dir, "sweep.svg"), await sweepChartSvg(input.points, "sweep"));
      charts.push({ file: "sweep.svg", caption: "output tok/s and median TTFT per load point" });
    }
    await writeFile(join(dir, "report.md"), runReportMarkdown({ ...input, charts }));
  });
}

/** An A/B's report directory: report.md and the chart of block ratios with the interval. */
export async function writeAbReportDir(
  outDir: string,
  input: { result: AbResult; names: { a: string; b: string }; unit: string; command?: string },
): Promise<void> {
  const { result, names } = input;
  await writeDirectoryAtomic(outDir, async (dir) => {
    const chart = "ab.svg";
    await writeFile(
      join(dir, chart),
      await abChartSvg({
        ratios: result.ratios,
        estimate: result.interval.estimate,
        low: result.interval.low,
        high: result.interval.high,
        title: `${names.b} against ${names.a}: ${result.metric}`,
      }),
    );
    await writeFile(join(dir, "report.md"), abReportMarkdown({ ...input, chart }));
  });
}
