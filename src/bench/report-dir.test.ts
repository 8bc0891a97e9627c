import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AbResult } from "./ab.js";
import type { RunMetrics } from "./metrics.js";
import { writeAbReportDir } from "./report-dir.js";

// The A/B report reads only each trial's value; its per-trial metrics are not rendered.
const noMetrics = {} as RunMetrics;

const result: AbResult = {
  method: "same-pod-ab",
  metric: "output_throughput",
  better: "higher",
  trials: [
    { block: 0, arm: "a", value: 10, metrics: noMetrics },
    { block: 0, arm: "b", value: 20, metrics: noMetrics },
    { block: 0, arm: "b", value: 22, metrics: noMetrics },
    { block: 0, arm: "a", value: 11, metrics: noMetrics },
  ],
  ratios: [2, 1.9],
  interval: { estimate: 1.95, low: 1.8, high: 2.1, df: 5 },
  cv: 0.04,
  trialRecords: [],
};

describe("writeAbReportDir", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "bringup-ab-report-"));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("writes the report with its chart beside it", async () => {
    const out = join(root, "report");
    await writeAbReportDir(out, { result, names: { a: "plain", b: "simd" }, unit: "tok/s" });
    expect((await readdir(out)).sort()).toEqual(["ab.svg", "report.md"]);
    const markdown = await readFile(join(out, "report.md"), "utf8");
    expect(markdown).toContain("Ratio 1.950x, 95% interval 1.800x to 2.100x");
    expect(markdown).toContain("](ab.svg)");
    expect(await readFile(join(out, "ab.svg"), "utf8")).toMatch(/^<svg/);
  });

  it("refuses a directory that exists and leaves it as it was", async () => {
    const out = join(root, "taken");
    await mkdir(out);
    await expect(
      writeAbReportDir(out, { result, names: { a: "plain", b: "simd" }, unit: "tok/s" }),
    ).rejects.toMatchObject({ code: "OUTPUT_EXISTS" });
    expect(await readdir(out)).toEqual([]);
    expect((await readdir(root)).sort()).toEqual(["taken"]);
  });
});
