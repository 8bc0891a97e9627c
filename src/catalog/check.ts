import type { Dirent } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { BringupError } from "../common/errors.js";
import { recipeProblems } from "../recipes/index.js";
import {
  type BenchRecord,
  inspectRecords,
  issueProblems,
  type Problem,
  recordNumbers,
} from "../records/index.js";
import {
  MANIFEST_FILE,
  PORT_LAYOUT,
  PORTS_README,
  README_FILE,
  RESULTS_DIR,
  topLevelEntries,
} from "./layout.js";
import { PORT_ID_PATTERN, PortManifest } from "./manifest.js";
import { figureRefs, isBacked, unitFigures } from "./prose.js";
import { parseYamlSource, type YamlSource } from "./yaml-source.js";

/** A linter finding: file (relative to the project root), line and field when known, what was expected. */
export type Diagnostic = Problem;

/** What the linter read of one port directory; fields are absent when that part was missing or invalid. */
export interface InspectedPort {
  /** The directory name, which must equal the manifest's id. */
  id: string;
  dir: string;
  manifest?: PortManifest;
  readme?: string;
  records: BenchRecord[];
}

export interface CatalogInspection {
  ports: InspectedPort[];
  diagnostics: Diagnostic[];
}

export const PORTS_DIR = "ports";

/** The layout linter: every diagnostic of the catalog under `root`, or of one port when `portId` is given. */
export async function checkCatalog(root: string, portId?: string): Promise<Diagnostic[]> {
  return (await inspectCatalog(root, portId)).diagnostics;
}

/** Reads the whole catalog (or one port), collecting every diagnostic rather than stopping at the first. */
export async function inspectCatalog(root: string, portId?: string): Promise<CatalogInspection> {
  const portsDir = join(root, PORTS_DIR);
  const entries = await listDir(portsDir);
  if (entries === undefined) {
    throw new BringupError(
      "CATALOG_NOT_FOUND",
      `${portsDir} does not exist; run bringup from a checkout that has ports/, or pass --root <dir>.`,
      { subject: portsDir },
    );
  }
  const diagnostics: Diagnostic[] = [];
  let dirs = entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  if (portId === undefined) {
    for (const entry of entries) {
      if (!entry.isDirectory() && entry.name !== PORTS_README) {
        diagnostics.push({
          file: `${PORTS_DIR}/${entry.name}`,
          message: "unexpected entry in ports/",
          expected: `a port directory or ${PORTS_README}`,
        });
      }
    }
  } else {
    if (!dirs.includes(portId)) {
      throw new BringupError(
        "PORT_NOT_FOUND",
        `no port ${portId} under ${portsDir}; run \`bringup ports list\` to see the ports there.`,
        { subject: portId },
      );
    }
    dirs = [portId];
  }
  const ports: InspectedPort[] = [];
  const declared = new Map<string, string>();
  for (const name of dirs.sort()) {
    const {
      port,
      diagnostics: found,
      idLine,
    } = await inspectPort(join(portsDir, name), `${PORTS_DIR}/${name}`, name);
    diagnostics.push(...found);
    ports.push(port);
    const declaredId = port.manifest?.id;
    if (declaredId === undefined) continue;
    const first = declared.get(declaredId);
    if (first !== undefined) {
      diagnostics.push({
        file: `${PORTS_DIR}/${name}/${MANIFEST_FILE}`,
        line: idLine,
        field: "id",
        message: `duplicate port id ${declaredId}, also declared by ${first}`,
        expected: "an id no other port uses",
      });
    } else {
      declared.set(declaredId, `${PORTS_DIR}/${name}/${MANIFEST_FILE}`);
    }
  }
  return { ports, diagnostics };
}

/**
 * Checks one port directory. `label` is how its files are named in diagnostics and `id` the id it
 * must declare (its directory name, or the final name of a port still being scaffolded).
 */
export async function inspectPort(
  dir: string,
  label: string,
  id: string,
): Promise<{ port: InspectedPort; diagnostics: Diagnostic[]; idLine?: number }> {
  const diagnostics: Diagnostic[] = [];
  const port: InspectedPort = { id, dir, records: [] };
  if (!PORT_ID_PATTERN.test(id)) {
    diagnostics.push({
      file: label,
      message: `directory name "${id}" is not a port id`,
      expected: "a lowercase slug such as mimo-v2.6-flash",
    });
  }
  diagnostics.push(...(await checkLayout(dir, label)));

  const store = await inspectRecords(join(dir, RESULTS_DIR), (name) => `${label}/${RESULTS_DIR}/${name}`);
  diagnostics.push(...store.problems);
  for (const [index, record] of store.records.entries()) {
    const where = store.locations[index];
    if (record.port !== id) {
      diagnostics.push({
        file: where?.file ?? `${label}/${RESULTS_DIR}`,
        line: where?.line,
        field: "port",
        message: `record ${record.id} belongs to port ${record.port}, not ${id}`,
        expected: `port "${id}" and an id starting with "${id}/"`,
      });
      continue;
    }
    port.records.push(record);
  }
  for (const [index, record] of store.records.entries()) {
    if (record.port !== id) continue;
    for (const [position, source] of (record.chained_from ?? []).entries()) {
      if (port.records.some((other) => other.id === source)) continue;
      const where = store.locations[index];
      diagnostics.push({
        file: where?.file ?? `${label}/${RESULTS_DIR}`,
        line: where?.line,
        field: `chained_from.${position}`,
        message: `record ${record.id} is chained from ${source}, which is not in this port's results`,
        expected: `the id of an A/B record of port ${id}`,
      });
    }
  }
  // A reference to a record whose line was rejected is not reported again: the line's problem says it.
  const recordIds = new Set([...port.records.map((record) => record.id), ...store.rejectedIds]);
  const storeValid = store.problems.length === 0;

  const manifestFile = `${label}/${MANIFEST_FILE}`;
  const manifestText = await readText(join(dir, MANIFEST_FILE));
  let idLine: number | undefined;
  if (manifestText !== undefined) {
    const source = parseYamlSource(manifestText, manifestFile);
    diagnostics.push(...source.problems);
    if (source.problems.length === 0) {
      const result = PortManifest.safeParse(source.data);
      if (!result.success) {
        diagnostics.push(
          ...issueProblems(result.error.issues, {
            file: manifestFile,
            schema: PortManifest,
            data: source.data,
            lineOf: source.lineOf,
          }),
        );
      } else {
        port.manifest = result.data;
        idLine = source.lineOf(["id"]);
        if (result.data.id !== id) {
          diagnostics.push({
            file: manifestFile,
            line: idLine,
            field: "id",
            message: `id ${result.data.id} does not match its directory ${id}`,
            expected: `id: ${id}`,
          });
        }
        diagnostics.push(...danglingRefs(result.data, recordIds, source, manifestFile, label));
        diagnostics.push(...referenceSeriesProblems(result.data, source, manifestFile));
        if (storeValid)
          diagnostics.push(...manifestTextFigures(result.data, source, manifestFile, id, port.records));
        // Checked-in recipe files must be what `bringup recipe` makes of this manifest.
        diagnostics.push(...(await recipeProblems(dir, label, result.data)));
      }
    }
  }

  const readmeText = await readText(join(dir, README_FILE));
  if (readmeText !== undefined) {
    port.readme = readmeText;
    const backing = backingNumbers(port.records, port.manifest);
    diagnostics.push(
      ...checkProse(readmeText, `${label}/${README_FILE}`, id, recordIds, storeValid ? backing : undefined),
    );
  }
  return { port, diagnostics, idLine };
}

async function checkLayout(dir: string, label: string): Promise<Diagnostic[]> {
  const diagnostics: Diagnostic[] = [];
  const allowed = topLevelEntries();
  for (const entry of (await listDir(dir)) ?? []) {
    if (!allowed.has(entry.name)) {
      diagnostics.push({
        file: `${label}/${entry.name}`,
        message: "unknown entry in the port directory",
        expected: `only ${[...allowed.keys()].join(", ")} (see ports/README.md)`,
      });
    }
  }
  // Walk each layout path from the top, so "tests" being a file is reported once, at "tests".
  const reported = new Set<string>();
  for (const entry of PORT_LAYOUT) {
    const parts = entry.path.replace(/\/$/, "").split("/");
    for (let depth = 1; depth <= parts.length; depth++) {
      const sub = parts.slice(0, depth).join("/");
      const wantDir = depth < parts.length || entry.kind === "dir";
      const kind = await kindOf(join(dir, sub));
      if (kind === undefined) {
        if (entry.stage === "required") {
          diagnostics.push({
            file: `${label}/${entry.path}`,
            message: `missing required ${entry.kind}`,
            expected: `${entry.path}: ${entry.what}`,
          });
        }
        break;
      }
      if ((kind === "dir") !== wantDir) {
        if (!reported.has(sub)) {
          reported.add(sub);
          diagnostics.push({
            file: `${label}/${sub}`,
            message: `is a ${kind}, not a ${wantDir ? "dir" : "file"}`,
            expected: `${entry.path}: ${entry.what}`,
          });
        }
        break;
      }
    }
  }
  if ((await kindOf(join(dir, RESULTS_DIR))) === "dir") {
    for (const entry of (await listDir(join(dir, RESULTS_DIR))) ?? []) {
      if (!entry.isFile() || !entry.name.endsWith(".jsonl")) {
        diagnostics.push({
          file: `${label}/${RESULTS_DIR}/${entry.name}`,
          message: "not a record store",
          expected: "only *.jsonl files in results/",
        });
      }
    }
  }
  return diagnostics;
}

async function kindOf(path: string): Promise<"file" | "dir" | undefined> {
  try {
    const info = await stat(path);
    return info.isDirectory() ? "dir" : "file";
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw error;
  }
}

function danglingRefs(
  manifest: PortManifest,
  recordIds: Set<string>,
  source: YamlSource,
  file: string,
  label: string,
): Diagnostic[] {
  const refs: { path: (string | number)[]; id: string }[] = [];
  for (const [index, item] of manifest.headline.entries()) {
    if ("record" in item) refs.push({ path: ["headline", index, "record"], id: item.record });
  }
  for (const [index, gate] of manifest.gates.entries()) {
    if (gate.record !== undefined) refs.push({ path: ["gates", index, "record"], id: gate.record });
  }
  return refs
    .filter((ref) => !recordIds.has(ref.id))
    .map((ref) => ({
      file,
      line: source.lineOf(ref.path),
      field: ref.path.join("."),
      message: `names record ${ref.id}, which is not in this port's results`,
      expected: `the id of a record in ${label}/${RESULTS_DIR}/*.jsonl`,
    }));
}

/**
 * The record series each gate and A/B of a port's reference section is shown from, in manifest
 * order: its `record`, else `<port>/reference-<kind>` (with `-2`, `-3` for further gates of one kind).
 * `bringup up` writes the series id on its first run and `<series>.<n>` (n = 2, 3, ...) after that,
 * since records are never rewritten; the page shows the latest of each series.
 */
export function referenceSeries(manifest: PortManifest): { gates: string[]; benchmarks: string[] } {
  const reference = manifest.reference;
  if (reference === undefined) return { gates: [], benchmarks: [] };
  const seen = new Map<string, number>();
  const gates = reference.gates.map((gate) => {
    if (gate.record !== undefined) return gate.record;
    const count = (seen.get(gate.kind) ?? 0) + 1;
    seen.set(gate.kind, count);
    return `${manifest.id}/reference-${gate.kind}${count > 1 ? `-${count}` : ""}`;
  });
  return { gates, benchmarks: reference.benchmarks.map((benchmark) => benchmark.record) };
}

/**
 * The series a run of a reference gate or A/B joins: the declared one when it ran the manifest's
 * workload, else `<series>-<what differed>` (e.g. `-ctx2048`, `-p512-o16-b2`), so a quick run
 * never replaces the full-size figure.
 */
export function workloadSeries(series: string, differences: readonly string[]): string {
  return differences.length === 0 ? series : `${series}-${differences.join("-")}`;
}

/** True when `recordId` is the series id itself or one of its later runs (`<series>.<n>`). */
export function inReferenceSeries(recordId: string, series: string): boolean {
  if (recordId === series) return true;
  return recordId.startsWith(`${series}.`) && /^[0-9]+$/.test(recordId.slice(series.length + 1));
}

/**
 * The reference section's records are produced by `bringup up`, so one not yet measured is not an
 * error (a headline item, gate or README that cites it still is). Each must belong to the port and
 * name its own series, or two figures would be shown from one record.
 */
function referenceSeriesProblems(manifest: PortManifest, source: YamlSource, file: string): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  const { gates, benchmarks } = referenceSeries(manifest);
  const entries = [
    ...gates.map((id, index) => ({ id, path: ["reference", "gates", index, "record"] })),
    ...benchmarks.map((id, index) => ({ id, path: ["reference", "benchmarks", index, "record"] })),
  ];
  const first = new Map<string, string>();
  for (const { id, path } of entries) {
    const line = source.lineOf(path);
    if (!id.startsWith(`${manifest.id}/`)) {
      diagnostics.push({
        file,
        line,
        field: path.join("."),
        message: `names record ${id}, which is not a record of port ${manifest.id}`,
        expected: `${manifest.id}/<slug>`,
      });
    }
    const earlier = first.get(id);
    if (earlier !== undefined) {
      diagnostics.push({
        file,
        line,
        field: path.join("."),
        message: `names record series ${id}, which ${earlier} names too`,
        expected: "a record id of its own for each reference gate and benchmark",
      });
    } else {
      first.set(id, path.join("."));
    }
  }
  return diagnostics;
}

function backingNumbers(records: BenchRecord[], manifest: PortManifest | undefined): number[] {
  return [...records.flatMap(recordNumbers), ...gateThresholds(manifest)];
}

/** Free text in the manifest is prose the site shows too, so a figure typed there needs a record as well. */
function manifestTextFigures(
  manifest: PortManifest,
  source: YamlSource,
  file: string,
  portId: string,
  records: BenchRecord[],
): Diagnostic[] {
  const texts: { path: (string | number)[]; text: string | undefined }[] = [
    { path: ["hard", "summary"], text: manifest.hard.summary },
    { path: ["status", "note"], text: manifest.status.note },
    ...manifest.headline.map((item, index) => ({
      path: ["headline", index, "text"],
      text: "text" in item ? item.text : undefined,
    })),
    ...manifest.target.variants.map((variant, index) => ({
      path: ["target", "variants", index, "note"],
      text: variant.note,
    })),
    ...manifest.gates.map((gate, index) => ({
      path: ["gates", index, "reference"],
      text: gate.kind === "perplexity" ? gate.reference : undefined,
    })),
  ];
  const numbers = backingNumbers(records, manifest);
  const diagnostics: Diagnostic[] = [];
  for (const { path, text } of texts) {
    for (const figure of unitFigures(text ?? "")) {
      if (isBacked(figure, numbers)) continue;
      diagnostics.push({
        file,
        line: source.lineOf(path),
        field: path.join("."),
        message: `"${figure.text}" is a figure that no record of this port (or gate threshold) states`,
        expected: `a headline item { record: ${portId}/<slug> } for the figure, and words without it here`,
      });
    }
  }
  return diagnostics;
}

/**
 * A gate's thresholds are manifest facts the page may quote ("the manifest allows 2%"); relative
 * fractions count as percentages too.
 */
export function gateThresholds(manifest: PortManifest | undefined): number[] {
  const numbers: number[] = [];
  for (const gate of manifest?.gates ?? []) {
    if (gate.kind === "perplexity") numbers.push(gate.max_relative_diff, gate.max_relative_diff * 100);
    if (gate.kind === "kv-capacity") numbers.push(gate.expected_ratio, gate.tolerance, gate.tolerance * 100);
  }
  return numbers;
}

function checkProse(
  markdown: string,
  file: string,
  portId: string,
  ids: Set<string>,
  numbers: number[] | undefined,
): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const ref of figureRefs(markdown)) {
    if (!ids.has(ref.id)) {
      diagnostics.push({
        file,
        line: ref.line,
        message: `[[fig:${ref.id}]] names no record of this port`,
        expected: `[[fig:${portId}/<slug>]] naming a record in results/*.jsonl`,
      });
    }
  }
  // With records rejected, what backs the prose is unknown until the store is fixed.
  if (numbers === undefined) return diagnostics;
  for (const figure of unitFigures(markdown)) {
    if (!isBacked(figure, numbers)) {
      diagnostics.push({
        file,
        line: figure.line,
        message: `"${figure.text}" is a figure that no record of this port (or gate threshold) states`,
        expected: `[[fig:${portId}/<slug>]] for a record, or a number taken from one`,
      });
    }
  }
  return diagnostics;
}

async function listDir(path: string): Promise<Dirent[] | undefined> {
  try {
    return await readdir(path, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw error;
  }
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "EISDIR") return undefined;
    throw error;
  }
}
