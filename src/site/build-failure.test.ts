import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import { buildSite, SITE_MARKER } from "./build.js";
import { manifest, port, writePorts } from "./tests/fixture.js";

/** One VitePress build that fails late (a dead link is found while bundling), over an earlier build. */
describe("buildSite when VitePress fails", () => {
  let work: string;
  let outDir: string;
  let error: unknown;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "bringup-site-fail-"));
    const root = join(work, "root");
    const catalog = {
      root,
      ports: [port(root, manifest("dead"), "# Dead\n\nSee [the recipe](./no-such-page.md).\n")],
    };
    await writePorts(catalog);
    outDir = join(work, "site");
    await mkdir(outDir);
    await writeFile(join(outDir, SITE_MARKER), "{}\n");
    await writeFile(join(outDir, "index.html"), "earlier build");
    error = await buildSite(catalog, outDir).catch((e: unknown) => e);
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it("fails with a clear error that names no temporary path", () => {
    expect(isBringupError(error) && error.code).toBe("SITE_BUILD_FAILED");
    expect((error as Error).message).toContain("Nothing was written");
    expect((error as Error).message).not.toContain(tmpdir());
  });

  it("keeps the earlier build as it was and leaves no temporary directory beside it", async () => {
    expect(await readFile(join(outDir, "index.html"), "utf8")).toBe("earlier build");
    expect((await readdir(outDir)).sort()).toEqual([SITE_MARKER, "index.html"].sort());
    expect((await readdir(work)).sort()).toEqual(["root", "site"]);
  });
});

/** A build stopped while it runs (Ctrl-C or SIGTERM in the CLI). */
describe("buildSite stopped by its signal", () => {
  let work: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "bringup-site-stop-"));
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it("stops the build, says so, and leaves neither the site nor a temporary directory", async () => {
    const root = join(work, "root");
    const catalog = { root, ports: [port(root, manifest("demo"), "# Demo\n")] };
    await writePorts(catalog);
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 1000);
    const error = await buildSite(catalog, join(work, "site"), { signal: stop.signal }).catch(
      (e: unknown) => e,
    );
    expect(isBringupError(error) && error.code).toBe("INTERRUPTED");
    expect((error as Error).message).toBe("the site build was stopped; nothing was written.");
    expect(await readdir(work)).toEqual(["root"]);
  });
});
