import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { runInProcess } from "../tests/run-in-process.js";
import { registerPorts } from "./ports.js";
import { registerRecords } from "./records.js";

const REPO = join(import.meta.dirname, "../../..");
const FIXTURES = join(REPO, "src/catalog/fixtures");

function runCommands(args: string[]) {
  return runInProcess([registerPorts, registerRecords], args);
}

describe("bringup ports", () => {
  let scratch: string | undefined;
  afterEach(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
    scratch = undefined;
  });

  it("check passes a valid catalog and exits 0", async () => {
    const result = await runCommands(["--root", join(FIXTURES, "valid"), "ports", "check"]);
    expect(result).toEqual({ stdout: "ok: every port passes\n", stderr: "", exitCode: undefined });
  });

  it("check prints file:line: field: message (expected ...) and exits 1", async () => {
    const result = await runCommands([
      "--root",
      join(FIXTURES, "broken/unknown-field"),
      "ports",
      "check",
      "demo",
    ]);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(
      /^ports\/demo\/port\.yaml:6: model\.colour: unknown field "colour" \(expected one of the fields name, family, .*\)\n$/,
    );
    expect(result.stderr).toBe("1 problem found\n");
  });

  it("check --json gives the diagnostics as data", async () => {
    const result = await runCommands([
      "--root",
      join(FIXTURES, "broken/bad-unit"),
      "ports",
      "check",
      "--json",
    ]);
    expect(result.exitCode).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      ok: false,
      diagnostics: [
        expect.objectContaining({ file: "ports/demo/results/records.jsonl", line: 2, field: "unit" }),
      ],
    });
  });

  it("check refuses an unknown port", async () => {
    await expect(
      runCommands(["--root", join(FIXTURES, "valid"), "ports", "check", "nope"]),
    ).rejects.toMatchObject({
      code: "PORT_NOT_FOUND",
    });
  });

  it("list shows each port, as a table or JSON", async () => {
    const root = join(FIXTURES, "valid");
    const table = await runCommands(["--root", root, "ports", "list"]);
    expect(table.stdout.split("\n")[0]).toMatch(
      /^ID\s+MODEL\s+SIZE\s+RUNS ON\s+STATUS\s+PROVEN HERE\s+RECORDS$/,
    );
    expect(table.stdout).toMatch(
      /demo\s+Demo-1\s+30B moe \(3B active\)\s+gaudi2, 8 cards, 1 node\s+production\s+no engine model code\s+2/,
    );
    const json = JSON.parse((await runCommands(["--root", root, "ports", "list", "--json"])).stdout);
    expect(json.map((port: { id: string }) => port.id)).toEqual(["bare", "demo"]);
  });

  it("list names a broken port as broken and still lists the others", async () => {
    const root = join(FIXTURES, "broken/duplicate-id");
    const table = await runCommands(["--root", root, "ports", "list"]);
    expect(table.stdout).toMatch(/demo\s+Demo-1/);
    expect(table.stdout).toMatch(
      /demo-copy\s+-\s+-\s+-\s+broken \(\d+ problems; bringup ports check demo-copy\)/,
    );
    const json = JSON.parse((await runCommands(["--root", root, "ports", "list", "--json"])).stdout);
    expect(json.find((port: { id: string }) => port.id === "demo-copy")).toMatchObject({ broken: true });
  });

  it("schema prints the manifest's JSON Schema", async () => {
    const schema = JSON.parse((await runCommands(["ports", "schema"])).stdout);
    expect(schema.type).toBe("object");
    expect(schema.required).toContain("id");
    expect(schema.additionalProperties).toBe(false);
  });

  it("new scaffolds a port that check passes, and refuses a bad feature or id", async () => {
    scratch = await mkdtemp(join(tmpdir(), "bringup-cli-"));
    await mkdir(join(scratch, "ports"));
    const args = ["--root", scratch, "ports", "new"];
    const created = await runCommands([...args, "nova-2", "--params", "120", "--feature", "attention.sinks"]);
    expect(created.stdout).toBe(`created ${join(scratch, "ports/nova-2")}\n`);
    expect((await runCommands(["--root", scratch, "ports", "check"])).exitCode).toBeUndefined();
    await expect(
      runCommands([...args, "nova-3", "--params", "1", "--feature", "attention.wobbly"]),
    ).rejects.toMatchObject({ code: "commander.invalidArgument" });
    await expect(
      runCommands([...args, "Nova", "--params", "1", "--feature", "attention.sinks"]),
    ).rejects.toMatchObject({
      code: "PORT_ID_INVALID",
    });
    await expect(
      runCommands([...args, "nova-2", "--params", "1", "--feature", "attention.sinks"]),
    ).rejects.toMatchObject({ code: "PORT_EXISTS" });
  });
});

describe("the CLI entry point (src/cli/main.ts)", () => {
  const run = promisify(execFile);
  const cli = (args: string[]) =>
    run(process.execPath, ["--import", "tsx", join(REPO, "src/cli/main.ts"), ...args], { cwd: REPO }).then(
      ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
      (error: { stdout: string; stderr: string; code: number }) => error,
    );

  it("exits 1 with the diagnostics of a broken catalog", async () => {
    const root = join(FIXTURES, "broken/unknown-feature");
    const check = await cli(["--root", root, "ports", "check"]);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(
      "ports/demo/port.yaml:16: hard.features.1: not an accepted value (expected one of",
    );
  });
});
