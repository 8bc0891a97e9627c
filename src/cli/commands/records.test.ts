import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runInProcess } from "../tests/run-in-process.js";
import { registerRecords } from "./records.js";

const ROOT = join(import.meta.dirname, "../../catalog/fixtures/valid");

function runCommands(args: string[]) {
  return runInProcess([registerRecords], args);
}

describe("bringup records", () => {
  it("list shows each record with its method and figures", async () => {
    const { stdout } = await runCommands(["--root", ROOT, "records", "list"]);
    expect(stdout).toMatch(
      /demo\/decode\s+same-pod-ab\s+decode at one stream\s+stock op: 17\.9 tok\/s; port kernel: 44\.5 tok\/s/,
    );
    expect(stdout).toMatch(
      /demo\/perplexity\s+single-run\s+perplexity against the reference\s+at most 0\.4%/,
    );
  });

  it("list fits 120 columns and counts an A/B's trial records instead of listing them", async () => {
    const repo = join(import.meta.dirname, "../../..");
    const { stdout } = await runCommands(["--root", repo, "records", "list"]);
    const lines = stdout.trimEnd().split("\n");
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(120);
    expect(stdout).not.toMatch(/-t\d+-[ab] {2}/);
    expect(lines.at(-1)).toMatch(/^\(\d+ trial records of A\/Bs not listed; --trials lists them\)$/);
    const all = await runCommands(["--root", repo, "records", "list", "mimo-v2.6-flash", "--trials"]);
    expect(all.stdout).toMatch(/-t\d+-[ab] {2}single-run/);
  });

  it("list narrows to one port and prints JSON", async () => {
    const records = JSON.parse(
      (await runCommands(["--root", ROOT, "records", "list", "demo", "--json"])).stdout,
    );
    expect(records.map((record: { id: string }) => record.id)).toEqual(["demo/decode", "demo/perplexity"]);
    expect(
      JSON.parse((await runCommands(["--root", ROOT, "records", "list", "bare", "--json"])).stdout),
    ).toEqual([]);
    await expect(runCommands(["--root", ROOT, "records", "list", "nope"])).rejects.toMatchObject({
      code: "PORT_UNKNOWN",
    });
    const broken = join(ROOT, "../broken/unknown-feature");
    await expect(runCommands(["--root", broken, "records", "list", "demo"])).rejects.toMatchObject({
      code: "PORT_BROKEN",
      message: expect.stringContaining("ports/demo/port.yaml:16: hard.features.1"),
    });
    // Listing every port goes on without the broken one and says so.
    const all = await runCommands(["--root", broken, "records", "list"]);
    expect(all.stderr).toContain("port demo is broken and left out");
  });

  it("show prints one record with what its method means, and refuses an unknown id", async () => {
    const { stdout } = await runCommands(["--root", ROOT, "records", "show", "demo/decode"]);
    expect(stdout).toContain("demo/decode: decode at one stream\n");
    // A copied figure says where it came from and what its source stated, not that bringup measured it.
    expect(stdout).toContain(
      "reported, not measured by bringup: from the demo page; stated method: same-pod A/B; filed under same-pod-ab",
    );
    expect(stdout).toContain("published in ports/demo/results/");
    expect(JSON.parse(stdout.slice(stdout.indexOf("{")))).toMatchObject({ id: "demo/decode", unit: "tok/s" });
    await expect(runCommands(["--root", ROOT, "records", "show", "demo/nope"])).rejects.toMatchObject({
      code: "RECORD_NOT_FOUND",
    });
  });
});
