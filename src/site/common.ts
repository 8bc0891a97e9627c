import type { Catalog, LoadedPort } from "../catalog/index.js";
import { FEATURES, type FeatureId } from "../catalog/index.js";
import { EXECUTION_MODE_LABELS } from "./facts.js";
import { code, text } from "./markdown.js";

/** Port names as a sentence list, or "every port (N)" when the group is the whole catalog. */
function names(ports: readonly LoadedPort[], all: number): string {
  if (ports.length === all && all > 1) return `every port (${all})`;
  return ports.map((port) => text(port.manifest.model.name)).join(", ");
}

function groupBy<K>(ports: readonly LoadedPort[], key: (port: LoadedPort) => K): Map<K, LoadedPort[]> {
  const groups = new Map<K, LoadedPort[]>();
  for (const port of ports) {
    const k = key(port);
    groups.set(k, [...(groups.get(k) ?? []), port]);
  }
  return groups;
}

/** "What the ports have in common", from the manifests: software, modes, graphs, kernels, features. */
export function renderCommon(catalog: Catalog): string {
  const ports = catalog.ports;
  const all = ports.length;
  const lines: string[] = ["## What the ports have in common", ""];

  const versions = [...groupBy(ports, (p) => p.manifest.software.gaudi_software)]
    .map(([version, group]) => `${text(version)} on ${names(group, all)}`)
    .join("; ");
  lines.push(`- **Gaudi software.** ${versions}.`);

  const modes = [...groupBy(ports, (p) => p.manifest.software.execution_mode)]
    .map(([mode, group]) => `in ${text(EXECUTION_MODE_LABELS[mode])}: ${names(group, all)}`)
    .join("; ");
  lines.push(`- **Execution modes.** ${modes}.`);

  const graphs = ports.filter((p) => p.manifest.software.hpu_graphs);
  const noGraphs = ports.filter((p) => !p.manifest.software.hpu_graphs);
  const graphText =
    graphs.length === 0
      ? "no port captures HPU graphs"
      : `captured on ${names(graphs, all)}${noGraphs.length > 0 ? `; not on ${names(noGraphs, all)}` : ""}`;
  lines.push(`- **HPU graphs.** ${graphText}.`);

  const kernels = ports.filter((p) => p.manifest.cookbook_kernels.includes("mxfp4-moe-decode"));
  const kernelText =
    kernels.length === 0
      ? "no port uses the cookbook's MXFP4 MoE decode kernels yet"
      : `${names(kernels, all)} decode their experts with the cookbook's MXFP4 MoE kernels`;
  lines.push(`- **The MXFP4 MoE kernels.** ${kernelText}.`);

  const byFeature = new Map<FeatureId, LoadedPort[]>();
  for (const port of ports) {
    for (const feature of new Set(port.manifest.hard.features)) {
      byFeature.set(feature, [...(byFeature.get(feature) ?? []), port]);
    }
  }
  const shared = [...byFeature].filter(([, group]) => group.length > 1);
  if (shared.length > 0) {
    lines.push("- **Shared architecture features.**");
    for (const [feature, group] of shared) {
      lines.push(`  - ${code(feature)} (${text(FEATURES[feature])}): ${names(group, all)}`);
    }
  }
  return lines.join("\n");
}
