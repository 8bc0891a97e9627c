import { join } from "node:path";
/**
 * The layout every port directory follows: the single source for the linter, the scaffolder and
 * the table in ports/README.md (a test keeps that table in step with this list).
 */
export type LayoutStage = "required" | "gained";
export type LayoutKind = "file" | "dir";

export interface LayoutEntry {
  /** Path inside `ports/<id>/`; a directory ends with `/`. */
  path: string;
  kind: LayoutKind;
  /** `required`: every port has it from the start; `gained`: a port adds it as it is brought up. */
  stage: LayoutStage;
  what: string;
}

export const PORT_LAYOUT: readonly LayoutEntry[] = [
  { path: "port.yaml", kind: "file", stage: "required", what: "the manifest (`bringup ports schema`)" },
  {
    path: "README.md",
    kind: "file",
    stage: "required",
    what: "the port's page; figures by `[[fig:<record-id>]]`",
  },
  {
    path: "results/",
    kind: "dir",
    stage: "gained",
    what: "append-only `*.jsonl` record stores, nothing else",
  },
  { path: "tests/cpu/", kind: "dir", stage: "gained", what: "CPU tests on the port's tiny reference config" },
  {
    path: "tests/hpu/run_gates.sh",
    kind: "file",
    stage: "gained",
    what: "the device gates for the real target",
  },
  {
    path: "recipe/Dockerfile",
    kind: "file",
    stage: "gained",
    what: "builds the target image from a stock one",
  },
  {
    path: "recipe/install.sh",
    kind: "file",
    stage: "gained",
    what: "installs the port, failing closed on a mismatch",
  },
];

export const MANIFEST_FILE = "port.yaml";
export const README_FILE = "README.md";
export const RESULTS_DIR = "results";
/**
 * Where runs record by default, per port, under the project root: outside the tracked ports/
 * (gitignored), so a local run never rewrites a published figure. `bringup records publish` moves
 * records from here into ports/<id>/results/.
 */
export const LOCAL_RESULTS_DIR = ".bringup/results";

/** The local (unpublished) store of one port. */
export function localResultsDir(root: string, portId: string): string {
  return join(root, LOCAL_RESULTS_DIR, portId);
}
/** The only file `ports/` itself holds besides port directories. */
export const PORTS_README = "README.md";

/** What may appear directly in a port directory, and whether it must be a file or a directory. */
export function topLevelEntries(): Map<string, LayoutKind> {
  const entries = new Map<string, LayoutKind>();
  for (const entry of PORT_LAYOUT) {
    const [first, ...rest] = entry.path.split("/");
    if (first === undefined) continue;
    entries.set(first, rest.length === 0 ? entry.kind : "dir");
  }
  return entries;
}
