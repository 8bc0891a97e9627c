import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
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

  it("convert --layout halves re-lays out MXFP4 codes, proven, and refuses another target", async () => {
    const halves = await run([
      "convert",
      join(work, "src"),
      join(work, "halves"),
      "--to",
      "mxfp4",
      "--layout",
      "halves",
    ]);
    expect(halves.error).toBeUndefined();
    expect(halves.out).toMatch(/e\.w\s+mxfp4\s+mxfp4 \(halves order\)\s+exact, verified bit for bit/);
    const inspected = JSON.parse((await run(["inspect", join(work, "halves"), "--json"])).out);
    expect(inspected.weights[0]).toMatchObject({
      name: "e.w",
      format: "mxfp4 (halves order)",
      parts: ["e.w_hblocks", "e.w_scales"],
    });
    expect(
      JSON.parse((await run(["verify", join(work, "src"), join(work, "halves"), "--json"])).out).ok,
    ).toBe(true);
    const refused = await run([
      "convert",
      join(work, "src"),
      join(work, "no"),
      "--to",
      "fp8",
      "--layout",
      "halves",
    ]);
    expect(String(refused.error)).toMatch(/layout halves .* use it with --to mxfp4/);
    expect(await readdir(work)).not.toContain("no");
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

  it("counts quantized weights as lossy in the summary, and says when every value was carried", async () => {
    const dir = join(work, "attention");
    await writeCheckpoint(dir, [
      {
        name: "attn.q.weight",
        dtype: "F32",
        shape: [4, 32],
        data: new Uint8Array(new Float32Array(128).map((_, i) => Math.sin(i)).buffer),
      },
    ]);
    const plain = await run(["convert", dir, join(work, "attention-kept"), "--to", "fp8", "--workers", "0"]);
    expect(plain.out).toMatch(/attn\.q\.weight\s+F32\s+F32\s+exact, verified bit for bit/);
    expect(plain.out).toMatch(/1 tensors, .*; every value carried exactly/);
    const asked = await run([
      ...["convert", dir, join(work, "attention-fp8"), "--to", "fp8", "--workers", "0"],
      ...["--include", "attn"],
    ]);
    expect(asked.out).toMatch(
      /attn\.q\.weight\s+F32\s+fp8-e4m3 \[128x128\]\s+quantized \(lossy, asked for\)/,
    );
    expect(asked.out).toMatch(/; 1 quantized \(lossy, --include\)/);
  });

  describe("as a process", () => {
    const REPO = join(import.meta.dirname, "../../..");
    let big: string;
    beforeAll(async () => {
      // 64 MiB of MXFP4 experts: converting and verifying it takes the child a second or more.
      big = join(work, "big");
      const [experts, rows, groups] = [16, 1024, 16];
      const blocks = new Uint8Array(experts * rows * groups * 16);
      for (let i = 0; i < blocks.length; i += 1) blocks[i] = Math.imul(i, 2654435761) >>> 24;
      const scales = new Uint8Array(experts * rows * groups).map((_, i) => 118 + (i % 8));
      await writeCheckpoint(big, [
        { name: "experts.w_blocks", dtype: "U8", shape: [experts, rows, groups, 16], data: blocks },
        { name: "experts.w_scales", dtype: "U8", shape: [experts, rows, groups], data: scales },
      ]);
    });
    const start = (shell: string, out: string) =>
      spawn(
        "bash",
        [
          "-c",
          `${shell} exec "$0" --import tsx src/cli/main.ts weights convert "$1" "$2" --to fp8 --workers 1 --no-progress`,
          process.execPath,
          big,
          out,
        ],
        { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] },
      );
    const finished = (child: ReturnType<typeof spawn>) =>
      new Promise<{ code: number | null; stderr: string }>((done) => {
        let stderr = "";
        child.stderr?.on("data", (chunk) => {
          stderr += String(chunk);
        });
        child.on("close", (code) => done({ code, stderr }));
      });

    it("removes everything it wrote when stopped by SIGTERM", async () => {
      const parent = join(work, "killed");
      await mkdir(parent);
      const child = start("", join(parent, "out"));
      const done = finished(child);
      // Stop it as soon as its temporary directory appears, while it converts (the output check's
      // probe file comes and goes before that).
      const converting = async () => (await readdir(parent)).some((n) => !n.startsWith(".bringup-probe-"));
      while (!(await converting())) await new Promise((r) => setTimeout(r, 5));
      child.kill("SIGTERM");
      const { code, stderr } = await done;
      expect(stderr).toMatch(/interrupted; nothing was written/);
      expect(code).toBe(143);
      expect(await readdir(parent)).toEqual([]);
    }, 60_000);

    it("reports a full disk as such, with no stack trace and nothing left", async () => {
      const parent = join(work, "full");
      await mkdir(parent);
      // A file size limit makes writes past 512 KiB fail as a full disk does (EFBIG).
      const { code, stderr } = await finished(start("trap '' XFSZ; ulimit -f 1024;", join(parent, "out")));
      expect(stderr).toMatch(
        /^bringup: .*out.*: the disk is full or the file too large .*\[OUTPUT_DISK_FULL\]\n$/s,
      );
      expect(stderr).not.toMatch(/\n\s+at /);
      expect(code).toBe(2);
      expect(await readdir(parent)).toEqual([]);
    }, 60_000);
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
