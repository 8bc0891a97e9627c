import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolVersion } from "../bench/index.js";
import { EXIT_USAGE } from "./run.js";
import { runWholeCli } from "./tests/run-whole-cli.js";

const cli = runWholeCli;

describe("runCli", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "bringup-run-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("prints the version", async () => {
    const run = await cli(["--version"]);
    expect(run.stdout.trim()).toBe(toolVersion().replace("bringup ", ""));
    expect(run.exitCode).toBe(0);
  });

  it("exits 2 on a usage error: an unknown option, a bad value, a missing argument", async () => {
    expect((await cli(["ports", "list", "--bogus"])).exitCode).toBe(EXIT_USAGE);
    const blocks = await cli(["up", "--ab-blocks", "1"]);
    expect(blocks.exitCode).toBe(EXIT_USAGE);
    expect(blocks.stderr).toContain("at least 2 ABBA blocks");
    expect((await cli(["records", "show"])).exitCode).toBe(EXIT_USAGE);
  });

  it("turns a filesystem error into one line naming the path, exit 2, no stack trace", async () => {
    const file = join(dir, "file");
    await writeFile(file, "x");
    const run = await cli(["weights", "make-tiny", "tiny", "--out", join(file, "model")]);
    expect(run.exitCode).toBe(EXIT_USAGE);
    expect(run.stderr).toMatch(
      new RegExp(`^bringup: cannot use ${file}.*a part of the path is a file.*\\[FS_NOT_DIRECTORY\\]\\n$`),
    );
    expect(run.stderr).not.toContain("    at ");
  });
});
