import type { SiteCatalog } from "./catalog.js";
import type { PortFiles } from "./inventory.js";
import { code, link } from "./markdown.js";
import { portLink } from "./paths.js";

/** What one port ships and what it still lacks, from the files found in its directory. */
export function shipped(files: PortFiles, recordCount: number): { has: string[]; lacks: string[] } {
  const has: string[] = [];
  const lacks: string[] = [];
  const item = (present: boolean, what: string, detail: string) =>
    (present ? has : lacks).push(present ? `${what} (${detail})` : what);
  item(files.manifest, "manifest", code("port.yaml"));
  item(files.readme, "page", code("README.md"));
  item(files.modelCode, "model code", code("model.ts"));
  item(files.cpuTests.length > 0, "CPU tests", files.cpuTests.map((f) => code(`tests/cpu/${f}`)).join(", "));
  item(files.deviceGates, "device gates", code("tests/hpu/run_gates.sh"));
  item(files.recipe.length > 0, "recipe", files.recipe.map((f) => code(`recipe/${f}`)).join(", "));
  item(
    files.results.length > 0,
    "results",
    `${files.results.map((f) => code(`results/${f}`)).join(", ")}; ${recordCount} ${recordCount === 1 ? "record" : "records"}`,
  );
  return { has, lacks };
}

/** "Availability": each port's directory and what it ships. */
export function renderAvailability(
  catalog: SiteCatalog,
  files: Map<string, PortFiles>,
  from: string,
): string {
  const lines = ["## Availability", "", "Each port is a directory of this repository:", ""];
  for (const port of catalog.ports) {
    const found = files.get(port.id);
    if (found === undefined) continue;
    const { has, lacks } = shipped(found, port.records.length);
    const parts = [`ships ${has.length > 0 ? has.join(", ") : "nothing yet"}`];
    if (lacks.length > 0) parts.push(`not yet: ${lacks.join(", ")}`);
    lines.push(
      `- ${link(port.manifest.model.name, portLink(from, port.id))}: ${code(found.path)} ${parts.join("; ")}.`,
    );
  }
  return lines.join("\n");
}
