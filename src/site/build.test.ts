import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Catalog, loadCatalog } from "../catalog/index.js";
import { isBringupError } from "../common/errors.js";
import { buildSite, SITE_MARKER } from "./build.js";
import { expectIndex, expectPortPage, expectSections, loadPage } from "./tests/expectations.js";

const repoRoot = resolve(fileURLToPath(import.meta.url), "../../..");

/** One VitePress build of the seed catalog, shared by the checks below (a build takes seconds). */
describe("buildSite on the seed catalog", () => {
  let work: string;
  let outDir: string;
  let catalog: Catalog;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "bringup-site-test-"));
    outDir = join(work, "site");
    catalog = await loadCatalog(repoRoot);
    await buildSite(catalog, outDir);
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it("writes the index, one page per port and the marker, and leaves no temporary directory", async () => {
    const pages = await readdir(join(outDir, "ports"));
    expect(pages.sort()).toEqual(catalog.ports.map((port) => `${port.id}.html`).sort());
    expect(await readdir(outDir)).toEqual(expect.arrayContaining(["index.html", "404.html", SITE_MARKER]));
    expect((await readdir(work)).sort()).toEqual(["site"]);
  });

  it("holds every port in the index with its facts and every headline figure with its method", async () => {
    expect(catalog.ports.length).toBeGreaterThan(0);
    expectIndex(await loadPage(outDir, "index.html"), catalog);
  });

  it("generates the common-ground and availability sections from the catalog", async () => {
    expectSections(await loadPage(outDir, "index.html"), catalog);
  });

  it("gives each port a page with its prose, figures, facts, gates and records", async () => {
    for (const port of catalog.ports) {
      expectPortPage(await loadPage(outDir, `ports/${port.id}.html`), catalog, port);
    }
  });

  it("refuses an --out that is a file and leaves it as it was", async () => {
    const file = join(work, "not-a-dir");
    await writeFile(file, "keep me");
    const error = await buildSite(catalog, file).catch((e: unknown) => e);
    expect(isBringupError(error) && error.code).toBe("SITE_OUT_NOT_DIRECTORY");
    expect(await readFile(file, "utf8")).toBe("keep me");
  });

  it("refuses to replace a directory it did not build", async () => {
    const dir = await mkdtemp(join(work, "user-"));
    await writeFile(join(dir, "notes.txt"), "mine");
    const error = await buildSite(catalog, dir).catch((e: unknown) => e);
    expect(isBringupError(error) && error.code).toBe("SITE_OUT_NOT_SITE");
    expect(await readdir(dir)).toEqual(["notes.txt"]);
    await rm(dir, { recursive: true });
  });

  it("names a README reference to a missing record and writes nothing", async () => {
    const [first, ...rest] = catalog.ports;
    if (first === undefined) throw new Error("the seed catalog has ports");
    const broken: Catalog = {
      root: catalog.root,
      ports: [{ ...first, readme: `${first.readme}\n\nSee [[fig:${first.id}/no-such-record]].\n` }, ...rest],
    };
    const target = join(work, "broken");
    const error = await buildSite(broken, target).catch((e: unknown) => e);
    expect(isBringupError(error) && error.code).toBe("SITE_UNKNOWN_RECORD");
    expect((error as Error).message).toContain(`${first.id}/no-such-record`);
    expect((error as Error).message).toContain("README.md:");
    expect((await readdir(work)).filter((name) => name.includes("broken"))).toEqual([]);
  });
});
