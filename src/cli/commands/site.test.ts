import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../../common/errors.js";
import { manifest, port, record, writePorts } from "../../site/tests/fixture.js";
import { registerSite } from "./site.js";

const repoRoot = resolve(fileURLToPath(import.meta.url), "../../../..");

/** Runs `bringup <args>` in process and returns what it threw (commands throw; only main.ts exits). */
async function run(args: string[]): Promise<unknown> {
  const program = new Command("bringup").option("--root <dir>").exitOverride();
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  registerSite(program);
  for (const command of program.commands) {
    command.exitOverride();
    for (const sub of command.commands) sub.exitOverride();
  }
  return program.parseAsync(["node", "bringup", ...args]).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("bringup site", () => {
  let work: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "bringup-cli-site-"));
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it("build refuses an --out that is a file, naming it", async () => {
    const file = join(work, "file");
    await writeFile(file, "x");
    const error = await run(["--root", repoRoot, "site", "build", "--out", file]);
    expect(isBringupError(error) && error.code).toBe("SITE_OUT_NOT_DIRECTORY");
    expect((error as Error).message).toContain(file);
  });

  it("build names an --out it cannot write, as a BringupError", async () => {
    const file = join(work, "file-parent");
    await writeFile(file, "x");
    const error = await run(["--root", repoRoot, "site", "build", "--out", join(file, "out")]);
    expect(isBringupError(error) && error.code).toBe("FS_NOT_DIRECTORY");
    expect((error as Error).message).toContain(file);
  });

  it("build stops on a README reference to a missing record and writes nothing", async () => {
    const root = join(work, "root");
    const m = manifest("a-port");
    const catalog = {
      root,
      ports: [port(root, m, "# A\n\nSee [[fig:a-port/missing]].\n", [record("a-port/decode")])],
    };
    await writePorts(catalog);
    const out = join(work, "out");
    const error = await run(["--root", root, "site", "build", "--out", out]);
    expect(isBringupError(error)).toBe(true);
    expect((error as Error).message).toContain("a-port/missing");
    expect(await readdir(work)).not.toContain("out");
  });

  it("serve says to build first when there is no site", async () => {
    const error = await run(["--root", work, "site", "serve", "--port", "0"]);
    expect(isBringupError(error) && error.code).toBe("SITE_NOT_BUILT");
    expect((error as Error).message).toContain("bringup site build");
  });

  it("serve rejects a port number out of range", async () => {
    const error = await run(["site", "serve", "--port", "70000"]);
    expect((error as { code?: string }).code).toBe("commander.invalidArgument");
  });
});
