import { readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import type { SiteCatalog, SitePort } from "./catalog.js";

/** What a port directory ships, read from the files present (DESIGN.md's port layout). */
export interface PortFiles {
  /** The port directory relative to the project root, with a trailing slash. */
  path: string;
  manifest: boolean;
  readme: boolean;
  modelCode: boolean;
  cpuTests: string[];
  deviceGates: boolean;
  recipe: string[];
  results: string[];
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}

/** Plain files directly in `dir` matching `keep`, sorted; none when the directory is absent. */
async function filesIn(dir: string, keep: (name: string) => boolean): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile() && keep(entry.name))
    .map((entry) => entry.name)
    .sort();
}

export async function inventoryPort(root: string, port: SitePort): Promise<PortFiles> {
  const [manifest, readme, modelCode, cpuTests, deviceGates, recipe, results] = await Promise.all([
    isFile(join(port.dir, "port.yaml")),
    isFile(join(port.dir, "README.md")),
    isFile(join(port.dir, "model.ts")),
    filesIn(join(port.dir, "tests", "cpu"), (name) => name.endsWith(".test.ts")),
    isFile(join(port.dir, "tests", "hpu", "run_gates.sh")),
    filesIn(join(port.dir, "recipe"), () => true),
    filesIn(join(port.dir, "results"), (name) => name.endsWith(".jsonl")),
  ]);
  const path = `${relative(root, port.dir).split("\\").join("/")}/`;
  return { path, manifest, readme, modelCode, cpuTests, deviceGates, recipe, results };
}

export async function inventoryCatalog(catalog: SiteCatalog): Promise<Map<string, PortFiles>> {
  const entries = await Promise.all(
    catalog.ports.map(async (port) => [port.id, await inventoryPort(catalog.root, port)] as const),
  );
  return new Map(entries);
}
