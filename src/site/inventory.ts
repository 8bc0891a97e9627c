import { readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { type Catalog, type LayoutEntry, type LoadedPort, PORT_LAYOUT } from "../catalog/index.js";

/** One entry of the port layout and the files found for it (empty when the port lacks it). */
export interface FoundEntry {
  entry: LayoutEntry;
  /** Paths inside the port directory, sorted: the file itself, or every file under the directory. */
  files: string[];
}

/** What a port directory ships, read from the files present, entry by entry of the layout. */
export interface PortFiles {
  /** The port directory relative to the project root, with a trailing slash. */
  path: string;
  entries: FoundEntry[];
}

async function filesUnder(dir: string, prefix: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => `${prefix}${relative(dir, join(entry.parentPath, entry.name)).split("\\").join("/")}`)
    .sort();
}

async function find(port: LoadedPort, entry: LayoutEntry): Promise<FoundEntry> {
  const path = join(port.dir, entry.path);
  if (entry.kind === "dir") return { entry, files: await filesUnder(path, entry.path) };
  const found = await stat(path).catch(() => undefined);
  return { entry, files: found?.isFile() ? [entry.path] : [] };
}

export async function inventoryPort(root: string, port: LoadedPort): Promise<PortFiles> {
  const entries = await Promise.all(PORT_LAYOUT.map((entry) => find(port, entry)));
  return { path: `${relative(root, port.dir).split("\\").join("/")}/`, entries };
}

export async function inventoryCatalog(catalog: Catalog): Promise<Map<string, PortFiles>> {
  const found = await Promise.all(
    catalog.ports.map(async (port) => [port.id, await inventoryPort(catalog.root, port)] as const),
  );
  return new Map(found);
}
