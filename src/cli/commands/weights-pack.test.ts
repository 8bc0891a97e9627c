import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeCheckpoint } from "../../formats/index.js";
import { runWholeCli } from "../tests/run-whole-cli.js";

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "bringup-cli-pack-"));
  await writeCheckpoint(join(work, "src"), [
    { name: "experts.w_blocks", dtype: "U8", shape: [4, 2, 16], data: new Uint8Array(128).fill(7) },
    {
      name: "norm.weight",
      dtype: "F32",
      shape: [4],
      data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer),
    },
  ]);
});
afterAll(() => rm(work, { recursive: true, force: true }));

describe("bringup weights pack", () => {
  it("packs for the ranks asked and `weights verify` proves the pack against its source", async () => {
    const out = join(work, "packed");
    const packed = await runWholeCli(["weights", "pack", join(work, "src"), out, "--ranks", "2"]);
    expect(packed.stdout).toMatch(/^2 tensors packed for 2 ranks in .*packed \(16\.0 KiB\); check it with/);
    const verified = await runWholeCli(["weights", "verify", join(work, "src"), out]);
    expect(verified.exitCode).toBeUndefined();
    expect(verified.stdout).toMatch(/experts\.w_blocks +U8 vs U8 packed in 2 row ranges +same +identical/);
    expect(verified.stdout).toMatch(/OK: every weight decodes bit-identically/);
  });

  it("refuses ranks that do not divide a split dimension in one line naming the tensor, and writes nothing", async () => {
    const run = await runWholeCli(["weights", "pack", join(work, "src"), join(work, "p3"), "--ranks", "3"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/tensor experts\.w_blocks has 4 rows .* 3 ranks do not divide/);
    const again = await runWholeCli(["weights", "pack", join(work, "src"), join(work, "p0"), "--ranks", "0"]);
    expect(again.stderr).toMatch(/--ranks 0: give a whole number from 1 to 1024/);
  });
});
