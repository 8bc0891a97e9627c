import { type Catalog, RESULTS_DIR } from "../catalog/index.js";
import type { FoundEntry, PortFiles } from "./inventory.js";
import { code, link } from "./markdown.js";
import { portLink } from "./paths.js";

function describe(found: FoundEntry, recordCount: number): string {
  if (found.entry.kind === "file") return code(found.entry.path);
  const files = found.files.map(code).join(", ");
  const records =
    found.entry.path === `${RESULTS_DIR}/`
      ? `; ${recordCount} ${recordCount === 1 ? "record" : "records"}`
      : "";
  return `${code(found.entry.path)} (${files}${records})`;
}

/** What one port ships and what of the layout it has not gained yet. */
export function shipped(files: PortFiles, recordCount: number): { has: string[]; lacks: string[] } {
  const present = files.entries.filter((found) => found.files.length > 0);
  const absent = files.entries.filter((found) => found.files.length === 0);
  return {
    has: present.map((found) => describe(found, recordCount)),
    lacks: absent.map((found) => code(found.entry.path)),
  };
}

/** "Availability": each port's directory and what it ships, from the files present. */
export function renderAvailability(catalog: Catalog, files: Map<string, PortFiles>, from: string): string {
  const lines = ["## Availability", "", "Each port is a directory of this repository:", ""];
  for (const port of catalog.ports) {
    const found = files.get(port.id);
    if (found === undefined) continue;
    const { has, lacks } = shipped(found, port.records.length);
    const parts = [`ships ${has.join(", ")}`];
    if (lacks.length > 0) parts.push(`not yet ${lacks.join(", ")}`);
    lines.push(
      `- ${link(port.manifest.model.name, portLink(from, port.id))}: ${code(found.path)} ${parts.join("; ")}.`,
    );
  }
  return lines.join("\n");
}
