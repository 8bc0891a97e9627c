import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { writeCheckpoint } from "../../formats/index.js";
import { registerWeights } from "./weights.js";

/** Runs `bringup weights ...` in process; returns stdout, the exit code it set and what it threw. */
async function run(args: string[]): Promise<{ out: string; exitCode: number | undefined; error: unknown }> {
  const program = new Command("bringup").exitOverride();
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  registerWeights(program);
  for (const command of program.commands) {
    command.exitOverride();
    for (const sub of command.commands) sub.exitOverride();
  }
  let out = "";
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    out += String(chunk);
    return true;
  });
  process.exitCode = undefined;
  try {
    const error = await program.parseAsync(["node", "bringup", "weights", ...args]).then(
      () => undefined,
      (e: unknown) => e,
    );
    return { out, exitCode: process.exitCode as number | undefined, error };
  } finally {
    spy.mockRestore();
    process.exitCode = undefined;
  }
}

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "bringup-cli-weights-"));
  await writeCheckpoint(join(work, "src"), [
    { name: "e.w_blocks", dtype: "U8", shape: [4, 1, 16], data: new Uint8Array(64).map((_, i) => i * 7) },
    { name: "e.w_scales", dtype: "U8", shape: [4, 1], data: new Uint8Array([126, 127, 128, 127]) },
    { name: "norm.weight", dtype: "F32", shape: [2], data: new Uint8Array(8) },
  ]);
  await writeFile(join(work, "src", "config.json"), "{}");
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe("bringup weights", () => {
  it("convert, inspect and verify with --json", async () => {
    const converted = await run([
      "convert",
      join(work, "src"),
      join(work, "fp8"),
      "--to",
      "fp8",
      "--workers",
      "0",
      "--json",
    ]);
    expect(converted.error).toBeUndefined();
    const report = JSON.parse(converted.out);
    expect(report.tensors.map((t: { name: string; exact: boolean }) => [t.name, t.exact])).toEqual([
      ["e.w", true],
      ["norm.weight", true],
    ]);
    const inspected = JSON.parse((await run(["inspect", join(work, "fp8"), "--json"])).out);
    expect(inspected.weights[0]).toMatchObject({ name: "e.w", format: "fp8-e4m3 [128x128]", shape: [4, 32] });
    const verified = await run(["verify", join(work, "src"), join(work, "fp8"), "--json"]);
    expect(JSON.parse(verified.out).ok).toBe(true);
    expect(verified.exitCode).toBeUndefined();
  });

  it("relayout round-trips with verify reporting identical bytes", async () => {
    const there = await run([
      "relayout",
      join(work, "src"),
      join(work, "swapped"),
      "--swap-nibbles",
      "^e\\.w$",
      "--rename",
      "^e\\.=experts.",
      "--json",
    ]);
    expect(there.error).toBeUndefined();
    expect(JSON.parse(there.out).renamed).toContainEqual({ from: "e.w_blocks", to: "experts.w_blocks" });
    await run([
      "relayout",
      join(work, "swapped"),
      join(work, "restored"),
      "--swap-nibbles",
      "w$",
      "--rename",
      "^experts\\.=e.",
    ]);
    const verified = JSON.parse(
      (await run(["verify", join(work, "src"), join(work, "restored"), "--json"])).out,
    );
    expect(verified.ok).toBe(true);
    const bad = await run(["relayout", join(work, "src"), join(work, "nope"), "--rename", "nothing"]);
    expect(String(bad.error)).toMatch(/PATTERN=REPLACEMENT/);
  });

  it("prints readable tables and fails verify with a non-zero exit code", async () => {
    const text = await run(["inspect", join(work, "src")]);
    expect(text.out).toMatch(/e\.w\s+mxfp4\s+\[4, 32\]/);
    expect(text.out).toMatch(/total: 3 tensors/);
    await writeCheckpoint(join(work, "other"), [
      { name: "norm.weight", dtype: "F32", shape: [2], data: new Uint8Array(8).fill(1) },
    ]);
    const verified = await run(["verify", join(work, "src"), join(work, "other")]);
    expect(verified.out).toMatch(/only in .*src: e\.w/);
    expect(verified.out).toMatch(/FAILED/);
    expect(verified.exitCode).toBe(1);
  });

  it("names the file and problem for bad input and leaves no output", async () => {
    const bad = join(work, "bad.safetensors");
    await writeFile(bad, new Uint8Array([200, 0, 0, 0, 0, 0, 0, 0, 123]));
    const result = await run(["convert", bad, join(work, "out"), "--to", "bf16"]);
    expect(String(result.error)).toMatch(/bad\.safetensors: the header length 200 runs past the end/);
    expect(await readdir(work)).not.toContain("out");
    const exists = await run(["convert", join(work, "src"), join(work, "src"), "--to", "bf16"]);
    expect(String(exists.error)).toMatch(/already exists/);
    const badWorkers = await run([
      "convert",
      join(work, "src"),
      join(work, "x"),
      "--to",
      "bf16",
      "--workers",
      "-1",
    ]);
    expect(String(badWorkers.error)).toMatch(/--workers -1/);
  });

  it("names an output path it cannot write before converting, as a BringupError", async () => {
    const file = join(work, "a-file");
    await writeFile(file, "x");
    for (const command of ["convert", "relayout"]) {
      const args = [
        command,
        join(work, "src"),
        join(file, "dst"),
        ...(command === "convert" ? ["--to", "bf16"] : []),
      ];
      const result = await run(args);
      expect(result.error).toMatchObject({
        code: "FS_NOT_DIRECTORY",
        message: expect.stringContaining(file),
      });
    }
  });
});
