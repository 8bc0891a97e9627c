import type { Catalog, LoadedPort } from "../catalog/index.js";
import { type BenchRecord, RUN_TARGET_LABELS, runTarget } from "../records/index.js";
import { figureLink, formatRecordFigure, recordAnchor } from "./figure.js";
import { code, frontMatter, link, text, vPre } from "./markdown.js";
import { portLink, RECORDS_PAGE } from "./paths.js";
import { isTrial } from "./series.js";

export const RECORDS_TITLE = "Records";

/** What a record is, for the records page's filter: a gate's result, a benchmark, or a reported figure. */
export type RecordKind = "gate" | "benchmark" | "reported";

export const RECORD_KIND_LABELS: Record<RecordKind, string> = {
  gate: "gate result",
  benchmark: "benchmark",
  reported: "reported figure",
};

/** A gate record's label ends with its verdict, as gates label their records. */
export function recordKind(record: BenchRecord): RecordKind {
  if (record.source.kind === "reported") return "reported";
  return /: gate (passed|failed)$/.test(record.label) ? "gate" : "benchmark";
}

/** A Markdown attribute value; record ids, port ids, methods and dates hold no quote or brace. */
function attribute(name: string, value: string): string {
  return `${name}="${value.replace(/["{}]/g, "")}"`;
}

/**
 * One record as a card (a list item that stacks on any width): its id as the target of links, what
 * it measured, the figure with its method linked to its row on the port's page, where it ran and
 * when; the item carries the values the page's filter reads.
 */
function card(port: LoadedPort, record: BenchRecord): string {
  const target = runTarget(record);
  const local = port.localRecords?.has(record.id) === true;
  const date = record.recorded_at.slice(0, 10);
  const where = `${RUN_TARGET_LABELS[target]}${local ? ", not published" : ""}`;
  const parts = [
    `**${code(record.id)}** ${text(record.label)}:`,
    figureLink(text(formatRecordFigure(record)), record, RECORDS_PAGE),
    `${text(`(${where}; ${date}; port`)} ${link(port.manifest.model.name, portLink(RECORDS_PAGE, port.id))}${text(")")}`,
  ];
  const attributes = [
    `#${recordAnchor(record.id)}`,
    attribute("data-port", port.id),
    attribute("data-kind", recordKind(record)),
    attribute("data-method", record.method),
    attribute("data-where", local ? "local-unpublished" : target),
    attribute("data-date", date),
  ];
  return `- ${parts.join(" ")} {${attributes.join(" ")}}`;
}

/**
 * Every record of every port but the A/B trials (each port's page lists those with their A/B), as
 * cards newest first; the site's theme adds the filters (port, kind, method, where it ran, since a
 * date) above the list with class `record-list`, and keeps them in the page's address.
 */
export function renderRecordsPage(catalog: Catalog): string {
  const entries = catalog.ports
    .flatMap((port) => port.records.filter((record) => !isTrial(record)).map((record) => ({ port, record })))
    .sort(
      (a, b) =>
        b.record.recorded_at.localeCompare(a.record.recorded_at) || a.record.id.localeCompare(b.record.id),
    );
  const list =
    entries.length === 0
      ? ["No records yet."]
      : [...entries.map((e) => card(e.port, e.record)), "{.record-list}"];
  const body = [
    `# ${RECORDS_TITLE}`,
    "",
    text(
      "Every record of every port, newest first: what it measured, its figure and method (linked to its row on the port's page), where it ran and when. Filter by port, kind, method, where it ran and date; the address keeps the filter, so a filtered list can be linked, and each record's own address is this page with #record-<port>--<slug>. The trials of each A/B are listed on its port's page.",
    ),
    "",
    ...list,
  ].join("\n");
  return frontMatter({ title: RECORDS_TITLE }) + vPre(body);
}
