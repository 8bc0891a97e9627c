import { fork } from "node:child_process";
import { mkdir, mkdtemp, readdir, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { type Catalog, referenceSeries } from "../catalog/index.js";
import { temporarySibling, writeDirectoryAtomic, writeFileAtomic } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import { portCharts, type SiteChart } from "./charts.js";
import { inventoryCatalog } from "./inventory.js";
import { renderSite, type SiteSource } from "./site.js";
import { sweepCharts } from "./sweep-chart.js";
import { THEME, THEME_CSS } from "./theme.js";

/** Marks a directory as one `buildSite` wrote, so a rebuild may replace it and nothing else. */
export const SITE_MARKER = ".bringup-site";

export interface BuiltSite {
  outDir: string;
  pages: string[];
}

/** The node_modules holding vitepress; the generated source links to it so Vue resolves from a temp dir. */
function nodeModulesDir(): string {
  const entry = createRequire(import.meta.url).resolve("vitepress");
  const at = entry.lastIndexOf(`${sep}node_modules${sep}`);
  return entry.slice(0, at + `${sep}node_modules`.length);
}

/** Refuses an --out that is a file, or a directory this builder did not write (and is not empty). */
async function checkOutDir(outDir: string): Promise<"absent" | "replace"> {
  const found = await stat(outDir).catch(() => undefined);
  if (found === undefined) return "absent";
  if (!found.isDirectory()) {
    throw new BringupError(
      "SITE_OUT_NOT_DIRECTORY",
      `${outDir} exists and is not a directory; remove it or pass another --out.`,
      { subject: outDir },
    );
  }
  const entries = await readdir(outDir);
  if (entries.length > 0 && !entries.includes(SITE_MARKER)) {
    throw new BringupError(
      "SITE_OUT_NOT_SITE",
      `${outDir} holds files that bringup site build did not write; remove it or pass another --out.`,
      { subject: outDir },
    );
  }
  return "replace";
}

async function writeSource(source: SiteSource, dir: string): Promise<void> {
  for (const page of source.pages) {
    const path = join(dir, page.path);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, page.markdown);
  }
  for (const asset of source.assets) {
    const path = join(dir, "public", asset.path);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, asset.content);
  }
  await mkdir(join(dir, ".vitepress"), { recursive: true });
  await writeFile(
    join(dir, ".vitepress", "config.mjs"),
    `export default ${JSON.stringify(source.config, null, 2)};\n`,
  );
  await mkdir(join(dir, ".vitepress", "theme"), { recursive: true });
  await writeFile(join(dir, ".vitepress", "theme", "index.mjs"), THEME);
  await writeFile(join(dir, ".vitepress", "theme", "site.css"), THEME_CSS);
  await symlink(nodeModulesDir(), join(dir, "node_modules"), "junction");
}

/** Run from TypeScript sources (tests, tsx), the build process needs tsx's loader too (a dev dependency). */
const FROM_SOURCE = import.meta.url.endsWith(".ts");
const VITEPRESS_PROCESS = new URL(
  FROM_SOURCE ? "./vitepress-process.ts" : "./vitepress-process.js",
  import.meta.url,
);

/**
 * VitePress in a child process on `srcDir`, writing `outDir`: resolves when it built, rejects with
 * its error message, and on `signal` stops it and rejects with INTERRUPTED once it has exited.
 */
function vitePressProcess(srcDir: string, outDir: string, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((done, fail) => {
    if (signal?.aborted) {
      fail(stopped(outDir));
      return;
    }
    const child = fork(fileURLToPath(VITEPRESS_PROCESS), [srcDir, outDir], {
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      execArgv: FROM_SOURCE ? ["--import", "tsx"] : [],
      env: { ...process.env, NODE_ENV: "production" },
    });
    let reported: string | undefined;
    let stderr = "";
    child.on("message", (message: { error?: string }) => {
      reported = message.error;
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const stop = () => child.kill("SIGTERM");
    signal?.addEventListener("abort", stop, { once: true });
    child.on("exit", (code) => {
      signal?.removeEventListener("abort", stop);
      if (signal?.aborted) fail(stopped(outDir));
      else if (code === 0) done();
      else fail(new Error(reported ?? (stderr.trim() || `the build process exited with code ${code}`)));
    });
  });
}

function stopped(outDir: string): BringupError {
  return new BringupError("INTERRUPTED", "the site build was stopped; nothing was written.", {
    subject: outDir,
  });
}

/** Runs VitePress on a generated source directory and writes the site into `outDir` (already created). */
async function runVitePress(
  source: SiteSource,
  outDir: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const srcDir = await mkdtemp(join(tmpdir(), "bringup-site-"));
  try {
    await writeSource(source, srcDir);
    await vitePressProcess(srcDir, outDir, signal);
  } catch (error) {
    if (error instanceof BringupError) throw error;
    // Name pages as they are generated (ports/<id>.md), not by the temporary directory.
    const message = (error as Error).message.split(`${srcDir}${sep}`).join("");
    throw new BringupError(
      "SITE_BUILD_FAILED",
      `VitePress could not build the site: ${message}. Nothing was written. Page ports/<id>.md is built from ports/<id>/README.md and port.yaml; fix the one named and rebuild.`,
      { subject: outDir, cause: error },
    );
  } finally {
    await rm(srcDir, { recursive: true, force: true });
  }
}

/**
 * Builds the static site for `catalog` into `outDir`, all or nothing: the pages are rendered and
 * checked first, VitePress builds into a sibling temporary directory, and only a finished site is
 * renamed into place (replacing an earlier build, never anything else). On `signal` the build
 * process is stopped and INTERRUPTED thrown, with no temporary directory left behind.
 */
export async function buildSite(
  catalog: Catalog,
  outDir: string,
  options: { readonly signal?: AbortSignal } = {},
): Promise<BuiltSite> {
  const target = resolve(outDir);
  const mode = await checkOutDir(target);
  const charts = new Map<string, SiteChart[]>();
  for (const port of catalog.ports) {
    charts.set(port.id, [
      ...(await portCharts(port.records, referenceSeries(port.manifest).benchmarks, port.localRecords)),
      ...(await sweepCharts(port.records, port.localRecords)),
    ]);
  }
  const source = renderSite(catalog, await inventoryCatalog(catalog), charts);
  const fill = async (dir: string) => {
    await runVitePress(source, dir, options.signal);
    await writeFileAtomic(
      join(dir, SITE_MARKER),
      `${JSON.stringify({ ports: catalog.ports.map((p) => p.id) })}\n`,
    );
  };
  if (mode === "absent") {
    await writeDirectoryAtomic(target, fill);
  } else {
    const staged = temporarySibling(target);
    await writeDirectoryAtomic(staged, fill);
    const old = temporarySibling(target);
    await rename(target, old);
    try {
      await rename(staged, target);
    } catch (error) {
      // Put the earlier build back rather than leave nothing at the target.
      await rename(old, target);
      await rm(staged, { recursive: true, force: true });
      throw error;
    }
    await rm(old, { recursive: true, force: true });
  }
  return { outDir: target, pages: source.pages.map((page) => page.path) };
}
