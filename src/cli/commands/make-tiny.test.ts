import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { afterAll, describe, expect, it, vi } from "vitest";
import { type DecoderLayer, type GqaAttention, loadModel } from "../../engine/index.js";
import { registerMakeTiny } from "./make-tiny.js";

const repoRoot = resolve(fileURLToPath(import.meta.url), "../../../..");
const work = await mkdtemp(join(tmpdir(), "bringup-make-tiny-"));
afterAll(() => rm(work, { recursive: true, force: true }));

/** Runs `bringup <args>` in process; returns what it printed and what it threw. */
async function run(args: string[]): Promise<{ out: string; error: unknown }> {
  const program = new Command("bringup").option("--root <dir>").exitOverride();
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  registerMakeTiny(program);
  for (const c of program.commands) {
    c.exitOverride();
    for (const sub of c.commands) sub.exitOverride();
  }
  let out = "";
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    out += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(["node", "bringup", "--root", repoRoot, ...args]);
    return { out, error: undefined };
  } catch (error) {
    return { out, error };
  } finally {
    spy.mockRestore();
  }
}

describe("bringup weights make-tiny", () => {
  it("--list prints every size", async () => {
    const { out, error } = await run(["weights", "make-tiny", "--list"]);
    expect(error).toBeUndefined();
    for (const name of ["tiny", "tiny-moe", "small", "medium", "bench-100m"]) expect(out).toContain(name);
  });

  it("writes a model directory that loads", async () => {
    const dir = join(work, "tiny");
    const { out, error } = await run([
      "weights",
      "make-tiny",
      "tiny",
      "--out",
      dir,
      "--dtype",
      "mxfp4",
      "--seed",
      "4",
    ]);
    expect(error).toBeUndefined();
    expect(out).toMatch(/wrote tiny \([\d,]+ parameters, vocab \d+, mxfp4, seed 4\)/);
    expect((await readdir(dir)).sort()).toEqual([
      "config.json",
      "generation_config.json",
      "model.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    expect(JSON.parse(await readFile(join(dir, "config.json"), "utf8")).bringup_tiny).toEqual({
      size: "tiny",
      seed: 4,
    });
    const model = await loadModel(dir);
    expect(((model.model.layers[0] as DecoderLayer).mixer as GqaAttention).weights.q.dtype).toBe("mxfp4");
  });

  it("refuses an unknown size and an existing output, saying what to do", async () => {
    expect((await run(["weights", "make-tiny", "huge", "--out", join(work, "x")])).error).toMatchObject({
      code: "TINY_SIZE_UNKNOWN",
    });
    expect((await run(["weights", "make-tiny", "tiny", "--out", join(work, "tiny")])).error).toMatchObject({
      code: "OUTPUT_EXISTS",
    });
    expect((await run(["weights", "make-tiny", "tiny"])).error).toMatchObject({ code: "OUT_MISSING" });
  });
});
