import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portReference } from "../../../test/helpers/port-reference.js";
import { loadCatalog, scaffoldPort } from "../../catalog/index.js";
import { kvBytesPerSequence, loadModel, planKvCache } from "../../engine/index.js";
import { type BringUpSummary, cachedModel } from "../../flow/index.js";
import { type RunningServer, startServer } from "../../server/index.js";
import { runInProcess } from "../tests/run-in-process.js";
import { registerUp } from "./up.js";

const REPO = join(import.meta.dirname, "../../..");
const PORT = "mimo-v2.6-flash";
/** A port with no reference section. */
const LACKING = "nova-2";

let root: string;
/** MiMo's tiny reference model served as an outside endpoint would be: the build and the full-KV baseline. */
const servers: RunningServer[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-up-cli-"));
  await mkdir(join(root, "ports"));
  await cp(join(REPO, "ports", "README.md"), join(root, "ports", "README.md"));
  await cp(join(REPO, "ports", PORT), join(root, "ports", PORT), { recursive: true });
  // A new port, without a reference section.
  await scaffoldPort(root, { id: LACKING, totalParamsB: 30, features: ["attention.sinks"] });
  const reference = (await loadCatalog(root)).ports.find((p) => p.id === PORT)?.manifest.reference;
  if (reference === undefined) throw new Error(`${PORT} has no reference section`);
  const files = (await portReference(PORT)).referenceFiles();
  const tiny = await cachedModel(join(root, "cache"), "tiny", { config: reference.config }, () => files);
  const model = await loadModel(tiny.dir);
  // One KV byte budget for both, as bringup up gives its own servers, so their capacities compare.
  const maxModelLen = reference.max_model_len;
  const kvCacheBytes = kvBytesPerSequence(planKvCache(model.model.states(), "full", 16).pools, maxModelLen);
  for (const kvLayout of ["window-sized", "full"] as const) {
    servers.push(
      await startServer({
        model,
        port: 0,
        maxModelLen,
        kvCacheBytes,
        blockSize: 16,
        kvLayout,
        maxNumSeqs: 2,
      }),
    );
  }
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await rm(root, { recursive: true, force: true });
});

describe("bringup up", () => {
  it("says what a port without a reference section lacks", async () => {
    const run = await runInProcess([registerUp], ["--root", root, "up", LACKING], {
      captureThrown: true,
    });
    expect(run.thrown).toMatchObject({ code: "PORT_NO_REFERENCE" });
    const orphan = await runInProcess(
      [registerUp],
      ["--root", root, "up", PORT, "--reference", "http://127.0.0.1:9"],
      { captureThrown: true },
    );
    expect(orphan.thrown).toMatchObject({ code: "UP_FLAG_NEEDS_ENDPOINT" });
  });

  it("refuses bad flags and unwritable outputs before anything starts", async () => {
    const refused = async (args: string[]) => {
      const run = await runInProcess([registerUp], ["--root", root, "up", PORT, ...args], {
        captureThrown: true,
      });
      // Nothing ran: no stage was announced.
      expect(run.stderr).not.toContain("manifest");
      return run.thrown;
    };
    expect(await refused(["--ab-blocks", "1"])).toMatchObject({
      code: "commander.invalidArgument",
      message: expect.stringContaining("at least 2 ABBA blocks"),
    });
    expect(await refused(["--endpoint", "notaurl"])).toMatchObject({ code: "commander.invalidArgument" });
    expect(await refused(["--model", "m"])).toMatchObject({ code: "UP_FLAG_NEEDS_ENDPOINT" });
    expect(await refused(["--sweep-concurrency", "1,0"])).toMatchObject({
      code: "commander.invalidArgument",
    });
    expect(await refused(["--no-sweep", "--sweep-concurrency", "1,2"])).toMatchObject({
      code: "UP_SWEEP_FLAG_CONFLICT",
      message: expect.stringContaining("--no-sweep"),
    });
    expect(await refused(["--endpoint", "http://127.0.0.1:9", "--sweep-concurrency", "4"])).toMatchObject({
      code: "UP_SWEEP_FLAG_CONFLICT",
      message: expect.stringContaining("bench run"),
    });
    const file = join(root, "a-file");
    await writeFile(file, "x");
    expect(await refused(["--cache-dir", join(file, "cache")])).toMatchObject({
      code: "FS_NOT_DIRECTORY",
      message: expect.stringContaining(file),
    });
    expect(await refused(["--site-out", join(file, "site", "out")])).toMatchObject({
      code: "FS_NOT_DIRECTORY",
    });
  });

  it("runs the reference gates and the A/B against outside endpoints and exits 1 when a gate fails", async () => {
    const [build, baseline] = servers as [RunningServer, RunningServer];
    const quick = ["--needle-contexts", "512", "--ab-prompt-tokens", "64", "--ab-output-tokens", "4"];
    const run = await runInProcess(
      [registerUp],
      [
        "--root",
        root,
        "up",
        PORT,
        "--endpoint",
        build.url,
        "--reference",
        baseline.url,
        "--json",
        "--no-site",
      ]
        .concat(quick)
        .concat(["--ab-blocks", "2"]),
    );
    const summary = JSON.parse(run.stdout) as BringUpSummary;
    expect(summary.target).toBe(build.url);
    // The tiny model itself cannot retrieve, so the needle gate fails against it; the others pass.
    expect(summary.gates.map((g) => [g.kind, g.status])).toEqual([
      ["perplexity", "passed"],
      ["needles", "failed"],
      ["kv-capacity", "passed"],
    ]);
    expect(summary.figures.at(-1)).toMatchObject({ method: "same-node-ab" });
    expect(summary.stages.find((s) => s.stage === "serve")?.status).toBe("skipped");
    // The sweep is the embedded engine's; an outside endpoint is swept with `bench run`.
    expect(summary.stages.find((s) => s.stage === "sweep")).toMatchObject({
      status: "skipped",
      detail: expect.stringContaining("bringup bench run --max-concurrency"),
    });
    expect(summary.sweep).toBeUndefined();
    expect(run.exitCode).toBe(1);

    // Without a baseline the comparing gates and the A/B say what to pass; the table names them.
    const alone = await runInProcess(
      [registerUp],
      ["--root", root, "up", PORT, "--endpoint", build.url, "--no-site"].concat(quick),
    );
    expect(alone.stdout).toMatch(/perplexity\s+not-run\s+GATE_NEEDS_REFERENCE/);
    expect(alone.stdout).toContain("--disable-hybrid-kv-cache-manager");
    expect(alone.stdout).toMatch(
      /A\/B mimo-v2\.6-flash\/reference-decode-ab-o64-b6 not measured: no endpoint serves the full/,
    );
    expect(alone.stderr).toContain("gates done");
    expect(alone.exitCode).toBe(1);

    // Arms on two hosts cannot make a same-node A/B: it is left out up front, with the reason.
    const elsewhere = baseline.url.replace("127.0.0.1", "localhost");
    const split = await runInProcess(
      [registerUp],
      ["--root", root, "up", PORT, "--endpoint", build.url, "--reference", elsewhere, "--json", "--no-site"]
        .concat(quick)
        .concat(["--ab-blocks", "2"]),
    );
    const splitSummary = JSON.parse(split.stdout) as BringUpSummary;
    expect(splitSummary.skippedBenchmarks).toEqual([expect.objectContaining({ code: "UP_AB_HOSTS_DIFFER" })]);
  });
});
