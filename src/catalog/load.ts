import { resolve } from "node:path";
import { BringupError } from "../common/errors.js";
import { type BenchRecord, formatProblem, type Problem, readRecords } from "../records/index.js";
import { inspectCatalog, PORTS_DIR } from "./check.js";
import { localResultsDir } from "./layout.js";
import type { PortManifest } from "./manifest.js";

export interface LoadedPort {
  id: string;
  /** Absolute path of `ports/<id>/`. */
  dir: string;
  manifest: PortManifest;
  /** The port page's markdown, figures still as `[[fig:<record-id>]]`. */
  readme: string;
  /** The port's records, in store-file then line order: the published ones, then (with `local`) the local ones. */
  records: BenchRecord[];
  /** Ids of the records read from the local, unpublished store (empty unless loaded with `local`). */
  localRecords?: ReadonlySet<string>;
}

/** A port the linter found problems in: commands about it refuse, commands about the others go on. */
export interface BrokenPort {
  id: string;
  problems: Problem[];
}

export interface Catalog {
  root: string;
  /** The ports without problems, sorted by id. */
  ports: LoadedPort[];
  /** The ports with problems, sorted by id (none when absent). */
  broken?: BrokenPort[];
}

export interface LoadOptions {
  /** Also read each port's local store (records of runs not yet published), marked in `localRecords`. */
  readonly local?: boolean;
}

/**
 * Loads every port under `root/ports`. A port with problems is listed in `broken` (with each
 * problem) instead of stopping the load, so commands about the other ports still work.
 */
export async function loadCatalog(root: string, options: LoadOptions = {}): Promise<Catalog> {
  const absolute = resolve(root);
  const { ports, diagnostics } = await inspectCatalog(absolute);
  const problemsOf = (id: string) =>
    diagnostics.filter(
      (problem) => problem.file.startsWith(`${PORTS_DIR}/${id}/`) || problem.file === `${PORTS_DIR}/${id}`,
    );
  const loaded: LoadedPort[] = [];
  const broken: BrokenPort[] = [];
  for (const { id, dir, manifest, readme, records } of ports) {
    const problems = problemsOf(id);
    // The linter reports a missing manifest or page, so without problems both are here.
    if (problems.length > 0 || manifest === undefined || readme === undefined) {
      broken.push({ id, problems });
      continue;
    }
    let localRecords = new Set<string>();
    let all = records;
    if (options.local) {
      const published = new Set(records.map((record) => record.id));
      // A local record already published under its id is the same run: the published copy stands.
      const local = (await readRecords(localResultsDir(absolute, id))).filter(
        (record) => !published.has(record.id),
      );
      localRecords = new Set(local.map((record) => record.id));
      all = [...records, ...local];
    }
    loaded.push({ id, dir, manifest, readme, records: all, localRecords });
  }
  return { root: absolute, ports: loaded, broken };
}

/**
 * The port a command is about: PORT_UNKNOWN when there is none, PORT_BROKEN (listing its problems)
 * when the linter found problems in it.
 */
export function findPort(catalog: Catalog, id: string): LoadedPort {
  const port = catalog.ports.find((candidate) => candidate.id === id);
  if (port !== undefined) return port;
  const broken = catalog.broken?.find((candidate) => candidate.id === id);
  if (broken !== undefined) throw brokenPortError(broken);
  throw new BringupError("PORT_UNKNOWN", `there is no port "${id}"; \`bringup ports list\` names them.`, {
    subject: id,
  });
}

/** PORT_BROKEN for one port, listing each problem. */
export function brokenPortError(port: BrokenPort): BringupError {
  return new BringupError(
    "PORT_BROKEN",
    `port ${port.id} has ${port.problems.length} problem${port.problems.length === 1 ? "" : "s"}; fix these (\`bringup ports check ${port.id}\` lists them too):\n${port.problems.map(formatProblem).join("\n")}`,
    { subject: port.id },
  );
}

/** One line per broken port, for commands that go on without them. */
export function brokenPortsNotice(catalog: Catalog): string | undefined {
  if (catalog.broken === undefined || catalog.broken.length === 0) return undefined;
  return catalog.broken
    .map(
      (port) =>
        `port ${port.id} is broken and left out (${port.problems.length} problem${port.problems.length === 1 ? "" : "s"}; \`bringup ports check ${port.id}\` lists them)`,
    )
    .join("\n");
}
