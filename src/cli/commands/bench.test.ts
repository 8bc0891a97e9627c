import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRecords } from "../../records/index.js";
import { type RunningServer, startServer } from "../../server/index.js";
import { runInProcess } from "../tests/run-in-process.js";
import { registerBench } from "./bench.js";
import { registerRecords } from "./records.js";

const FIXTURE = join(import.meta.dirname, "../../catalog/fixtures/valid");

/** Runs commands in process, capturing stdout; a library error rejects. */
async function run(args: string[]): Promise<string> {
  return (await runInProcess([registerRecords, registerBench], args)).stdout;
}

describe("bringup bench and records compare", () => {
  let root: string;
  let server: RunningServer;
  const workload = [
    "--num-prompts",
    "3",
    "--random-input-len",
    "8",
    "--random-output-len",
    "4",
    "--ignore-eos",
  ];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "bringup-bench-cli-"));
    await cp(FIXTURE, root, { recursive: true });
    server = await startServer({ tinySize: "tiny", port: 0, threads: 1 });
  });
  afterAll(async () => {
    await server.close();
    await rm(root, { recursive: true, force: true });
  });

  it("bench run and ab check --report-dir before measuring anything", async () => {
    const file = join(root, "a-file");
    await writeFile(file, "x");
    // The endpoint is closed: an error about it would mean the output was checked too late.
    for (const args of [
      ["run", "--endpoint", "http://127.0.0.1:9"],
      ["ab", "--a", "http://127.0.0.1:9", "--b", "http://127.0.0.1:9"],
    ]) {
      await expect(
        run(["--root", root, "bench", ...args, ...workload, "--report-dir", join(file, "report")]),
      ).rejects.toMatchObject({ code: "FS_NOT_DIRECTORY", message: expect.stringContaining(file) });
    }
  });

  it("bench run sweeps, prints JSON, writes records and a report with charts", async () => {
    const reportDir = join(root, "report");
    const out = await run([
      "--root",
      root,
      "bench",
      "run",
      "--endpoint",
      server.url,
      ...workload,
      "--max-concurrency",
      "1,2",
      "--metric-percentiles",
      "50,99",
      "--port-id",
      "demo",
      "--report-dir",
      reportDir,
      "--json",
    ]);
    const report = JSON.parse(out);
    expect(report.model).toBe("tiny");
    expect(report.points.map((p: { load: string }) => p.load)).toEqual([
      "all at once, concurrency 1",
      "all at once, concurrency 2",
    ]);
    expect(report.points[0].metrics.completed).toBe(3);
    expect(report.points[0].metrics.tokenCheck.streamMismatches).toBe(0);
    const records = await readRecords(join(root, ".bringup/results/demo"));
    const ttft = records.find((r) => r.id.endsWith("-concurrency-1-ttft-ms"));
    expect(ttft?.method).toBe("single-run");
    expect(ttft?.arms[0]?.samples.length).toBe(3);
    expect(ttft?.arms[0]?.fingerprint?.software).toMatchObject({
      bringup: expect.any(String),
      model: "tiny",
    });
    const markdown = await readFile(join(reportDir, "report.md"), "utf8");
    expect(markdown).toContain("![latency, all at once, concurrency 2](latency-2.svg)");
    expect(await readFile(join(reportDir, "sweep.svg"), "utf8")).toMatch(/^<svg/);
  });

  it("bench ab records an interleaved A/B; chain refuses records that share no arm", async () => {
    const out = await run([
      "--root",
      root,
      "bench",
      "ab",
      "--a",
      server.url,
      "--b",
      server.url,
      "--a-name",
      "first",
      "--b-name",
      "second",
      "--blocks",
      "2",
      "--seed",
      "5",
      ...workload,
      "--max-concurrency",
      "1",
      "--port-id",
      "demo",
      "--json",
    ]);
    const result = JSON.parse(out);
    expect(result.method).toBe("same-node-ab");
    expect(result.ratios.length).toBe(2);
    expect(result.trials.map((t: { arm: string }) => t.arm).join("")).toBe("abbaabba");
    const id = result.record as string;
    await expect(run(["--root", root, "bench", "chain", id, id, "--dry-run"])).rejects.toMatchObject({
      code: "CHAIN_NO_SHARED_ARM",
    });
  });

  it("records compare refuses different fingerprints unless different-conditions, then names them", async () => {
    const records = await readRecords(join(root, ".bringup/results/demo"));
    const one = records.find((r) => r.id.endsWith("-concurrency-1-output-throughput"));
    const two = records.find((r) => r.id.endsWith("-concurrency-2-output-throughput"));
    const trial = (await readRecords(join(root, ".bringup/results/demo"))).find((r) =>
      r.id.endsWith("-t001-a"),
    );
    if (!one || !two || !trial) throw new Error("records missing");
    expect(await run(["--root", root, "records", "compare", one.id, two.id])).toMatch(
      /the fingerprints match/,
    );
    // The A/B ran another seed's prompts, so its trials' fingerprints differ in the workload.
    await expect(run(["--root", root, "records", "compare", one.id, trial.id])).rejects.toMatchObject({
      code: "RECORDS_NOT_COMPARABLE",
    });
    const listed = await run([
      "--root",
      root,
      "records",
      "compare",
      one.id,
      trial.id,
      "--method",
      "different-conditions",
      "--record",
    ]);
    expect(listed).toMatch(/different conditions:\ncondition.*\nworkload_hash\s+sha256:/);
    expect(listed).toMatch(/recorded as demo\/compare-/);
  });
});
