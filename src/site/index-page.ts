import type { Catalog } from "../catalog/index.js";
import { renderAvailability } from "./availability.js";
import { renderCommon } from "./common.js";
import { modelSummary, runsOn } from "./facts.js";
import { renderHeadlineItem } from "./headline.js";
import type { PortFiles } from "./inventory.js";
import { frontMatter, link, table, text, vPre } from "./markdown.js";
import { INDEX_PAGE, portLink } from "./paths.js";
import type { IndexedRecord } from "./record-index.js";

export const INDEX_HEADERS = ["Model", "What made it hard", "Runs on", "Headline"] as const;

/** The Ports index: one row per port, then the common ground and where each port lives. */
export function renderIndexPage(
  catalog: Catalog,
  records: Map<string, IndexedRecord>,
  files: Map<string, PortFiles>,
): string {
  const rows = catalog.ports.map((port) => {
    const { manifest } = port;
    const summary = [modelSummary(manifest.model), manifest.scope === "small" ? "small port" : ""]
      .filter((part) => part !== "")
      .join(", ");
    const name = link(manifest.model.name, portLink(INDEX_PAGE, port.id));
    const model = summary === "" ? name : `${name} ${text(`(${summary})`)}`;
    const headline = manifest.headline
      .map((item) => renderHeadlineItem(item, port, records, INDEX_PAGE))
      .join("; ");
    return [model, text(manifest.hard.summary), text(runsOn(manifest.target)), headline];
  });
  const body = [
    "# Ports",
    "",
    "Models brought up on inference hardware. Each port's page says what was hard, how it was solved, which gates it passes and what it measured; every figure names how it was measured.",
    "",
    table(INDEX_HEADERS, rows),
    "",
    renderCommon(catalog),
    "",
    renderAvailability(catalog, files, INDEX_PAGE),
  ].join("\n");
  // No outline column: the port table gets the width.
  return frontMatter({ title: "Ports", aside: false }) + vPre(body);
}
