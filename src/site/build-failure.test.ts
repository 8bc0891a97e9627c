import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isBringupError } from "../common/errors.js";
import { buildSite, SITE_MARKER } from "./build.js";
import { manifest, port, writePorts } from "./tests/fixture.js";

/** One VitePress build that fails late (a dead link is found while bundling), over an earlier build. */
describe("buildSite when VitePress fails", () => {
  const work = mkdtemp(join(tmpdir(), "bringup-site-fail-"));

  afterAll(async () => {
    await rm(await work, { recursive: true, force: true });
  });

  it("keeps the earlier build as it was and leaves no temporary directory beside it", async () => {
    const dir = await work;
    const root = join(dir, "root");
    const catalog = {
      root,
      ports: [port(root, manifest("dead"), "# Dead\n\nSee [the recipe](./no-such-page.md).\n")],
    };
    await writePorts(catalog);
    const outDir = join(dir, "site");
    await mkdir(outDir);
    await writeFile(join(outDir, SITE_MARKER), "{}\n");
    await writeFile(join(outDir, "index.html"), "earlier build");

    const error = await buildSite(catalog, outDir).catch((e: unknown) => e);
    expect(isBringupError(error) && error.code).toBe("SITE_BUILD_FAILED");
    expect((error as Error).message).toContain("Nothing was written");
    expect((error as Error).message).not.toContain(tmpdir());

    expect(await readFile(join(outDir, "index.html"), "utf8")).toBe("earlier build");
    expect((await readdir(outDir)).sort()).toEqual([SITE_MARKER, "index.html"].sort());
    expect((await readdir(dir)).sort()).toEqual(["root", "site"]);
  });
});
