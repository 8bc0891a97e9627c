import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTinyModel, findTinySize } from "../../engine/index.js";
import { readRecords } from "../../records/index.js";
import { type RunningServer, startServer } from "../../server/index.js";
import { runInProcess } from "../tests/run-in-process.js";
import { registerGate } from "./gate.js";

const FIXTURE = join(import.meta.dirname, "../../catalog/fixtures/valid");
let root: string;
let a: RunningServer;
let b: RunningServer;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-gate-cli-"));
  await cp(FIXTURE, root, { recursive: true });
  const size = findTinySize("tiny");
  if (!size) throw new Error("tiny size missing");
  const model = await createTinyModel(size);
  a = await startServer({ model, port: 0, threads: 1 });
  b = await startServer({ model, port: 0, threads: 1 });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await rm(root, { recursive: true, force: true });
});

/** Runs `bringup gate ...` in process, capturing output and the exit code it sets. */
function gate(args: string[]) {
  return runInProcess([registerGate], ["--root", root, "gate", ...args]);
}

const small = ["--window", "64", "--windows", "1"];

describe("bringup gate", () => {
  it("passes a port's perplexity gate against a reference endpoint, prints JSON and appends a record", async () => {
    const { stdout, exitCode } = await gate([
      "demo",
      "--endpoint",
      a.url,
      "--reference",
      b.url,
      ...small,
      "--json",
    ]);
    expect(exitCode).toBeUndefined();
    const out = JSON.parse(stdout);
    expect(out.outcomes[0].status).toBe("passed");
    expect(out.endpoint.scoring).toBe("prompt_logprobs");
    const records = await readRecords(join(root, ".bringup", "results", "demo"));
    const written = records.find((r) => r.id === out.records[0]);
    expect(written?.method).toBe("same-pod-ab");
  });

  it("exits non-zero when a gate fails, and says why in the table", async () => {
    const failed = await gate([
      "demo",
      "--endpoint",
      a.url,
      "--reference-value",
      "1",
      ...small,
      "--no-record",
    ]);
    expect(failed.exitCode).toBe(1);
    expect(failed.stdout).toMatch(/perplexity\s+failed\s+perplexity [\d.]+ vs reference 1\.0000/);
  });

  it("stops before any request when a gate's baseline is missing, naming the option to pass", async () => {
    const run = await runInProcess(
      [registerGate],
      ["--root", root, "gate", "demo", "--endpoint", a.url, "--no-record"],
      {
        captureThrown: true,
      },
    );
    expect(run.stdout).toBe("");
    expect(run.thrown).toMatchObject({ code: "GATE_NEEDS_REFERENCE" });
    expect(String((run.thrown as Error).message)).toMatch(/pass --reference URL or --reference-value PPL/);
  });

  it("writes a golden file from a trusted build", async () => {
    const path = join(root, "golden.json");
    const { stdout } = await gate(["demo", "--endpoint", b.url, "--write-golden", path]);
    expect(stdout).toMatch(/wrote 4 golden decodes of tiny \(greedy\)/);
  });

  it("refuses a port without the asked gate kinds", async () => {
    await expect(gate(["demo", "--endpoint", a.url, "--only", "needles"])).rejects.toThrow(
      /no needles gates/,
    );
  });

  it("runs a port's device check by kind, as a recipe's run_gates.sh asks for it", async () => {
    const repo = join(import.meta.dirname, "../../..");
    const { stdout, exitCode } = await runInProcess(
      [registerGate],
      ["--root", repo, "gate", "mimo-v2.6-flash", "--endpoint", a.url, "--reference", b.url].concat([
        "--only",
        "device-logprobs",
        "--no-record",
        "--json",
      ]),
    );
    expect(exitCode).toBeUndefined();
    const out = JSON.parse(stdout);
    expect(out.outcomes.map((o: { kind: string; status: string }) => [o.kind, o.status])).toEqual([
      ["device-logprobs", "passed"],
    ]);
  });
});
