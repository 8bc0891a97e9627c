import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sweepRecordId } from "../bench/index.js";
import { loadCatalog, scaffoldPort } from "../catalog/index.js";
import { readRecords } from "../records/index.js";
import { renderSite, sweepCharts } from "../site/index.js";
import { bringUp } from "./bring-up.js";
import type { BringUpOptions } from "./bring-up-options.js";
import { nextSeriesId } from "./record-ids.js";
import { STAGES, type StageEvent } from "./summary.js";

const REPO = join(import.meta.dirname, "../..");
const PORT = "mimo-v2.6-flash";

/** A port with no reference section. */
const LACKING = "nova-2";
let root: string;
let results: string;
let published: string;
/** Reduced sizes: needles at 1K, a short A/B and sweep; the site is rendered in memory instead of built. */
let quick: BringUpOptions;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-up-"));
  await mkdir(join(root, "ports"));
  await cp(join(REPO, "ports", "README.md"), join(root, "ports", "README.md"));
  // The port brought up, and a new one, without a reference section.
  await cp(join(REPO, "ports", PORT), join(root, "ports", PORT), { recursive: true });
  await scaffoldPort(root, { id: LACKING, totalParamsB: 30, features: ["attention.sinks"] });
  results = join(root, ".bringup", "results", PORT);
  published = join(root, "ports", PORT, "results");
  quick = {
    root,
    port: PORT,
    cacheDir: join(root, "cache"),
    needleContexts: [1024],
    benchmarkSize: { promptTokens: 128, outputTokens: 8, blocks: 2 },
    sweep: { concurrencies: [1, 2], requestsPerStream: 1, promptTokens: 32, outputTokens: 4 },
    site: false,
  };
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The ids the next run's records of these series get (the copied and local results may hold earlier runs). */
async function nextIds(...series: string[]): Promise<string[]> {
  const ids = [...(await readRecords(published)), ...(await readRecords(results))].map((r) => r.id);
  return series.map((s) => nextSeriesId(`${PORT}/${s}`, ids));
}

/** Each embedded server refuses connections once the run is over. */
async function expectStopped(urls: readonly (string | undefined)[]): Promise<void> {
  for (const url of urls) {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  }
}

/** Every file of a directory with its text, to show that a run left it alone. */
async function readdirContents(dir: string): Promise<Record<string, string>> {
  const contents: Record<string, string> = {};
  for (const name of await readdir(dir)) contents[name] = await readFile(join(dir, name), "utf8");
  return contents;
}

describe("bringUp", () => {
  it("brings the port up end to end: gates passed, records with their methods, servers stopped", async () => {
    const events: StageEvent[] = [];
    // A quick run's sizes name its own series, so it never replaces the full-size figure.
    const [perplexityId, needlesId, capacityId, abId] = await nextIds(
      "reference-perplexity",
      "reference-needles-ctx1024",
      "reference-kv-capacity",
      "reference-decode-ab-o64-b6-p128-o8-b2",
    );
    const publishedBefore = await readdirContents(published);
    const summary = await bringUp({ ...quick, onStage: (event) => events.push(event) });

    expect(summary.aborted).toBe(false);
    expect(summary.gates.map((g) => [g.kind, g.status])).toEqual([
      ["perplexity", "passed"],
      ["needles", "passed"],
      ["kv-capacity", "passed"],
    ]);
    expect(summary.gates.map((g) => [g.record, g.method])).toEqual([
      [perplexityId, "same-pod-ab"],
      [needlesId, "single-run"],
      [capacityId, "same-pod-ab"],
    ]);
    // The capacity is held to the layouts' own ratio at max_model_len, not only to the manifest's limit.
    expect(summary.gates.find((g) => g.kind === "kv-capacity")?.summary).toMatch(
      /and the builds' 5\.2\d\dx by construction within 2\.0%/,
    );
    expect(summary.skippedBenchmarks).toEqual([]);
    const ab = summary.figures.find((f) => f.record === abId);
    expect(ab?.method).toBe("same-pod-ab");
    expect(ab?.interval).toHaveLength(2);
    expect(ab?.text).toContain("same-pod A/B");

    // Every stage announced, in order, and ended; MiMo converts nothing.
    const ends = events.filter((e) => e.status !== "started");
    expect(ends.map((e) => e.stage)).toEqual([...STAGES]);
    expect(ends.find((e) => e.stage === "convert")?.detail).toContain("no conversion");
    expect(ends.find((e) => e.stage === "weights")?.detail).toContain("made");

    const written = await readRecords(results);
    const byId = new Map(written.map((r) => [r.id, r]));
    const perplexity = byId.get(perplexityId as string);
    expect(perplexity?.arms.map((a) => a.name)).toEqual(["window-sized KV layout", "full KV layout"]);
    expect(perplexity?.arms.map((a) => a.fingerprint?.server_flags?.at(-1))).toEqual([
      "--kv-layout=window-sized",
      "--kv-layout=full",
    ]);
    expect(perplexity?.source).toMatchObject({ kind: "measured", tool: "bringup up" });
    // The fingerprint tells machines apart: host name, CPU, cores, memory, OS, Node, the weights.
    const fingerprint = perplexity?.arms[0]?.fingerprint;
    expect(fingerprint?.host).not.toBe("127.0.0.1");
    expect(fingerprint?.machine).toMatchObject({ cores: expect.any(Number), cpu: expect.any(String) });
    expect(fingerprint?.software?.node).toBe(process.versions.node);
    expect(fingerprint?.weights_checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Gate records state the gate's own figures: needles out of those asked, capacities and their ratio.
    expect(byId.get(needlesId as string)?.arms[0]?.figure).toEqual({
      shape: "fraction",
      passed: 3,
      total: 3,
    });
    const capacity = byId.get(capacityId as string);
    const [window, full] = (capacity?.arms ?? []).map((a) =>
      a.figure?.shape === "point" ? a.figure.value : 0,
    );
    expect(capacity?.comparison?.figure).toEqual({
      shape: "point",
      value: Number(((window as number) / (full as number)).toPrecision(4)),
    });
    const record = byId.get(abId as string);
    expect(record?.method).toBe("same-pod-ab");
    expect(record?.arms[0]?.fingerprint).toMatchObject({
      machine: fingerprint?.machine,
      weights_checksum: fingerprint?.weights_checksum,
      workload_hash: expect.stringMatching(/^sha256:/),
    });
    expect(record?.comparison?.ci95).toHaveLength(2);
    expect(record?.arms.map((a) => [a.name, a.samples.length])).toEqual([
      ["full KV layout", 4],
      ["window-sized KV layout", 4],
    ]);
    const trials = await readFile(join(results, "bench-trials.jsonl"), "utf8");
    expect(trials.split("\n").filter((line) => line.includes(`"${abId}-t0`))).toHaveLength(8);

    // The sweep: the baseline and the build at each concurrency, each point's records in the local
    // store under the sweep's id, which the port page draws as one throughput-latency chart.
    const sweep = summary.sweep;
    expect(sweep?.points.map((p) => [p.concurrency, p.arm, p.failed])).toEqual([
      [1, "full KV layout", 0],
      [1, "window-sized KV layout", 0],
      [2, "window-sized KV layout", 0],
      [2, "full KV layout", 0],
    ]);
    expect(sweep?.points.every((p) => p.outputTokPerS > 0 && p.ttftMedianMs > 0)).toBe(true);
    expect(ends.find((e) => e.stage === "sweep")).toMatchObject({
      status: "done",
      detail: expect.stringContaining(`records ${sweep?.id}-*`),
    });
    const swept = written.filter((r) => sweepRecordId(r.id)?.sweep === sweep?.id);
    expect(swept).toHaveLength(16);
    expect(swept.every((r) => summary.records.includes(r.id) && r.method === "single-run")).toBe(true);
    expect(swept.find((r) => r.id.endsWith("-c2-ttft-ms"))?.arms[0]?.samples).toHaveLength(2);
    expect(swept[0]?.arms[0]?.fingerprint?.server_flags?.at(-1)).toBe("--kv-layout=full");
    const charts = await sweepCharts(written);
    expect(charts.map((c) => c.file)).toEqual([`${sweep?.id}.sweep.svg`]);

    await expectStopped([summary.servers.build, summary.servers.baseline, summary.servers.retrieval]);

    // The records stay in the local store: the published ones are byte for byte as they were.
    expect(summary.recordsDir).toBe(results);
    expect(await readdirContents(published)).toEqual(publishedBefore);

    // A preview with the local records shows each figure of the run with its method, marked local.
    const site = renderSite(await loadCatalog(root, { local: true }), new Map());
    const page = site.pages.find((p) => p.path === `ports/${PORT}.md`)?.markdown ?? "";
    expect(page).toContain("### Reference run");
    expect(page).toContain(`\`${abId}\``);
    expect(page).toMatch(/local run\\?, not published/);
    expect(page).toContain("same\\-pod A\\/B");
    expect(page).toContain("single run");
  });

  it("reuses the cached weights, numbers later records of a series, and on abort stops the servers and keeps what it recorded", async () => {
    const controller = new AbortController();
    const events: StageEvent[] = [];
    const expected = await nextIds(
      "reference-perplexity",
      "reference-needles-ctx1024",
      "reference-kv-capacity",
    );
    const [abId] = await nextIds("reference-decode-ab-o64-b6-p128-o8-b2");
    expect(expected.every((id) => /\.[0-9]+$/.test(id))).toBe(true);
    const summary = await bringUp({
      ...quick,
      sweep: false,
      signal: controller.signal,
      onStage: (event) => events.push(event),
      // Stop as soon as the first A/B trial is measured.
      onProgress: (event) => {
        if (event.stage === "benchmarks" && event.done === 1) controller.abort();
      },
    });
    // Checked together, so a run that was not stopped shows why its A/B was skipped.
    expect({ aborted: summary.aborted, skipped: summary.skippedBenchmarks }).toEqual({
      aborted: true,
      skipped: [expect.objectContaining({ code: "UP_ABORTED" })],
    });
    expect(events.find((e) => e.stage === "weights" && e.status === "done")?.detail).toContain("tiny reused");
    expect(events.find((e) => e.stage === "sweep" && e.status !== "started")).toMatchObject({
      status: "skipped",
      detail: "--no-sweep",
    });
    expect(summary.sweep).toBeUndefined();
    expect(summary.gates.map((g) => g.record)).toEqual(expected);
    expect(events.find((e) => e.stage === "site")?.status).toBe("started");
    expect(events.find((e) => e.stage === "site" && e.status !== "started")?.status).toBe("skipped");
    await expectStopped([summary.servers.build, summary.servers.baseline, summary.servers.retrieval]);

    const ids = (await readRecords(results)).map((r) => r.id);
    expect(ids).toEqual(expect.arrayContaining(expected));
    // The trial measured before the stop is kept; no A/B record was made from one trial.
    expect(ids).toContain(`${abId}-t001-a`);
    expect(ids).not.toContain(abId);
  });

  it("stopped during the sweep, keeps the points measured before the stop and runs no A/B", async () => {
    const controller = new AbortController();
    const summary = await bringUp({
      ...quick,
      signal: controller.signal,
      onProgress: (event) => {
        if (event.stage === "sweep" && event.done === 1) controller.abort();
      },
    });
    expect(summary.aborted).toBe(true);
    expect(summary.sweep?.points.map((p) => [p.concurrency, p.arm])).toEqual([[1, "full KV layout"]]);
    const swept = (await readRecords(results)).filter(
      (r) => sweepRecordId(r.id)?.sweep === summary.sweep?.id,
    );
    expect(swept.map((r) => sweepRecordId(r.id)?.metric)).toEqual([
      "output-throughput",
      "ttft-ms",
      "tpot-ms",
      "e2el-ms",
    ]);
    expect(summary.stages.find((s) => s.stage === "benchmarks")).toMatchObject({
      status: "skipped",
      detail: "stopped before the A/Bs",
    });
    await expectStopped([summary.servers.build, summary.servers.baseline, summary.servers.retrieval]);
  });

  it("says what a port lacks: a reference section, or model code", async () => {
    await expect(bringUp({ ...quick, port: LACKING })).rejects.toMatchObject({
      code: "PORT_NO_REFERENCE",
      message: expect.stringContaining(`add a \`reference:\` section to ports/${LACKING}/port.yaml`),
    });
    // The port's reference config naming an architecture no engine family reads.
    const other = await mkdtemp(join(tmpdir(), "bringup-up-nofamily-"));
    try {
      await cp(join(root, "ports"), join(other, "ports"), { recursive: true });
      const manifest = join(other, "ports", PORT, "port.yaml");
      const text = await readFile(manifest, "utf8");
      await writeFile(
        manifest,
        text
          .replace("model_type: mimo_v2_flash", "model_type: no_family")
          .replaceAll("[MiMoV2FlashForCausalLM]", "[NoFamilyForCausalLM]"),
      );
      await expect(bringUp({ ...quick, root: other, cacheDir: join(other, "cache") })).rejects.toMatchObject({
        code: "PORT_NO_MODEL_CODE",
        message: expect.stringMatching(
          /"NoFamilyForCausalLM" and model_type "no_family" are not supported.*src\/engine\/models\//,
        ),
      });
    } finally {
      await rm(other, { recursive: true, force: true });
    }
    await expect(bringUp({ ...quick, port: "no-such-port" })).rejects.toMatchObject({ code: "PORT_UNKNOWN" });
  });
});
