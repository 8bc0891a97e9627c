import { resolve } from "node:path";
import { BringupError } from "../common/errors.js";
import { type BenchRecord, formatProblem } from "../records/index.js";
import { inspectCatalog } from "./check.js";
import type { PortManifest } from "./manifest.js";

export interface LoadedPort {
  id: string;
  /** Absolute path of `ports/<id>/`. */
  dir: string;
  manifest: PortManifest;
  /** The port page's markdown, figures still as `[[fig:<record-id>]]`. */
  readme: string;
  /** The port's records, in store-file then line order. */
  records: BenchRecord[];
}

export interface Catalog {
  root: string;
  /** Sorted by id. */
  ports: LoadedPort[];
}

/** Loads every port under `root/ports`; throws CATALOG_INVALID listing every diagnostic if any port is invalid. */
export async function loadCatalog(root: string): Promise<Catalog> {
  const absolute = resolve(root);
  const { ports, diagnostics } = await inspectCatalog(absolute);
  if (diagnostics.length > 0) {
    throw new BringupError(
      "CATALOG_INVALID",
      `the catalog under ${absolute} has ${diagnostics.length} problem${diagnostics.length === 1 ? "" : "s"}; fix these (\`bringup ports check\` lists them too):\n${diagnostics.map(formatProblem).join("\n")}`,
      { subject: absolute },
    );
  }
  return {
    root: absolute,
    ports: ports.map(({ id, dir, manifest, readme, records }) => {
      // The linter reports a missing manifest or page, so with no diagnostics both are here.
      if (manifest === undefined || readme === undefined) {
        throw new BringupError(
          "CATALOG_INVALID",
          `port ${id} has no manifest or page; run \`bringup ports check ${id}\`.`,
        );
      }
      return { id, dir, manifest, readme, records };
    }),
  };
}
