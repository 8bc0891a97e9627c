import { FEATURES, type FeatureId } from "../catalog/features.js";
import type { SiteCatalog, SitePort } from "./catalog.js";
import { EXECUTION_MODE_LABELS } from "./facts.js";
import { code, text } from "./markdown.js";

/** Port names as a sentence list, or "every port (N)" when the group is the whole catalog. */
function names(ports: readonly SitePort[], all: number): string {
  if (ports.length === all && all > 1) return `every port (${all})`;
  return ports.map((port) => text(port.manifest.model.name)).join(", ");
}

function capitalize(value: string): string {
  return value.charAt(0).toUpperCase() + value.slice(1);
}

function groupBy<K>(ports: readonly SitePort[], key: (port: SitePort) => K): Map<K, SitePort[]> {
  const groups = new Map<K, SitePort[]>();
  for (const port of ports) {
    const k = key(port);
    groups.set(k, [...(groups.get(k) ?? []), port]);
  }
  return groups;
}

/** "What the ports have in common", from the manifests: software, modes, graphs, kernels, features. */
export function renderCommon(catalog: SiteCatalog): string {
  const ports = catalog.ports;
  const all = ports.length;
  const lines: string[] = ["## What the ports have in common", ""];

  const versions = [...groupBy(ports, (p) => p.manifest.software.gaudi_software)]
    .map(([version, group]) => `${text(version)} on ${names(group, all)}`)
    .join("; ");
  lines.push(`- **Gaudi software.** ${versions}.`);

  const modes = [...groupBy(ports, (p) => p.manifest.software.execution_mode)]
    .map(([mode, group]) => `${text(capitalize(EXECUTION_MODE_LABELS[mode]))}: ${names(group, all)}`)
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

  const byFeature = new Map<FeatureId, SitePort[]>();
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
