import type { LoadedPort } from "../catalog/index.js";
import { FEATURES, latestInSeries } from "../catalog/index.js";
import type { BenchRecord } from "../records/index.js";
import type { SiteChart } from "./charts.js";
import { renderDeviceCheck } from "./device-check.js";
import {
  acceleratorName,
  cardsAndNodes,
  EXECUTION_MODE_LABELS,
  formatWeightFormat,
  GATE_NAMES,
  gateThreshold,
  modelSize,
  statusText,
  variantSummary,
} from "./facts.js";
import {
  armFigure,
  figureLink,
  formatConditions,
  formatFigure,
  formatRecordFigure,
  formatValue,
  methodName,
  recordAnchor,
} from "./figure.js";
import { renderHeadlineItem } from "./headline.js";
import { code, frontMatter, table, text, vPre } from "./markdown.js";
import { portPage } from "./paths.js";
import { renderProven } from "./proven.js";
import { renderFigureRefs } from "./readme.js";
import { renderRecipe } from "./recipe.js";
import { type IndexedRecord, requireRecord } from "./record-index.js";
import { localMark, renderReferenceRun } from "./reference-run.js";
import { isTrial } from "./series.js";

const NONE = "—";

function facts(port: LoadedPort): string {
  const { manifest } = port;
  const { model, target, software } = manifest;
  const lines = [
    "## Port facts",
    "",
    `- **Model.** ${text(`${model.name}, ${model.family} family`)}`,
    `- **Size.** ${text(modelSize(model))}`,
    `- **Weight formats.** ${text(model.weight_formats?.map(formatWeightFormat).join(", ") ?? "not stated by the source")}`,
    `- **Scope.** ${manifest.scope === "full" ? "a written-up port" : "a small port: a few model patches, explained on its recipe"}`,
    `- **What made it hard.** ${text(manifest.hard.summary)}`,
    `- **Target.** ${text(`${cardsAndNodes(target.cards, target.nodes)} of ${acceleratorName(target.accelerator)}`)}`,
  ];
  for (const variant of target.variants) {
    const kind = variant.documented ? "documented" : "shipped";
    lines.push(
      `  - ${text(`${kind}: ${variantSummary(variant)} on ${acceleratorName(target.accelerator)}: ${variant.note}`)}`,
    );
  }
  lines.push(
    `- **Software.** ${text(`Gaudi software ${software.gaudi_software}`)}; ${text(EXECUTION_MODE_LABELS[software.execution_mode])}; HPU graphs ${software.hpu_graphs ? "on" : "off"}`,
    `- **Cookbook kernels.** ${manifest.cookbook_kernels.length > 0 ? manifest.cookbook_kernels.map(code).join(", ") : "none"}`,
    `- **Status.** ${text(`${statusText(manifest.status)} (claimed for its device runs elsewhere; what this repository proves follows)`)}`,
    ...renderProven(port, portPage(port.id)),
  );
  return lines.join("\n");
}

/** Where the architecture comes from, with links to public reference code and papers a reader can open. */
function lineage(port: LoadedPort): string[] {
  const declared = port.manifest.lineage;
  if (declared === undefined) return [];
  const sources =
    declared.sources.length === 0
      ? ["No public source describes this model."]
      : declared.sources.map(
          (source) => `- [${text(source.title)}](<${source.url.replace(/[<>\s]/g, encodeURIComponent)}>)`,
        );
  return ["### Lineage", "", text(declared.summary), "", ...sources, ""];
}

function features(port: LoadedPort): string {
  if (port.manifest.hard.features.length === 0) return "### Features\n\nNone listed.";
  const rows = port.manifest.hard.features.map((id) => [code(id), text(FEATURES[id])]);
  return ["### Features", "", table(["Feature", "What it is"], rows)].join("\n");
}

function gates(port: LoadedPort, records: Map<string, IndexedRecord>): string {
  if (port.manifest.gates.length === 0) return "### Gates\n\nNo gates declared yet.";
  const rows = port.manifest.gates.map((gate) => {
    const record =
      gate.record === undefined
        ? undefined
        : requireRecord(records, gate.record, `${port.dir}/port.yaml (gates)`).record;
    const result =
      record === undefined ? NONE : figureLink(text(formatRecordFigure(record)), record, portPage(port.id));
    return [text(GATE_NAMES[gate.kind]), text(gateThreshold(gate)), result];
  });
  return ["### Gates", "", table(["Gate", "Passes when", "Result"], rows)].join("\n");
}

/** The headline figures as cards (VitePress tip boxes) at the top of the page; nothing when there are none. */
function headlineCards(port: LoadedPort, records: Map<string, IndexedRecord>): string[] {
  if (port.manifest.headline.length === 0) return [];
  const cards = port.manifest.headline.map((item) =>
    ["::: tip Headline", renderHeadlineItem(item, port, records, portPage(port.id)), ":::"].join("\n"),
  );
  return [cards.join("\n\n"), ""];
}

function arms(record: BenchRecord): string {
  return record.arms
    .map((arm) => {
      const { figure, fromSamples } = armFigure(arm);
      const detail = fromSamples ? ` (median of ${arm.samples.length} samples)` : "";
      return `${arm.name}: ${formatFigure(figure, record.unit)}${detail}`;
    })
    .join("; ");
}

/**
 * Where a record came from. A reported figure names its source only when a reader can open it (a
 * link); the seed notes the catalog was written from are not public, so they are not cited.
 */
function source(record: BenchRecord): string {
  if (record.source.kind === "reported") {
    const where = /^https?:\/\//.test(record.source.where) ? `, from ${record.source.where}` : "";
    return `reported, not measured here${where}; stated method: ${record.source.stated_method}`;
  }
  return `measured with ${record.source.tool}${record.source.command === undefined ? "" : ` (${record.source.command})`}`;
}

/** A table of records, each row the target of the links to its record, inside a collapsed block. */
function collapsedRecords(port: LoadedPort, title: string, list: readonly BenchRecord[]): string {
  const rows = list.map((record) => [
    `${code(record.id)}{#${recordAnchor(record.id)}}`,
    text(record.label),
    figureLink(text(formatValue(record)), record, portPage(port.id)),
    text(arms(record)),
    text(methodName(record)),
    text(`${source(record)}${localMark(port, record)}`),
    record.method === "different-conditions" ? text(formatConditions(record)) : NONE,
  ]);
  const headers = ["Record", "What", "Figure", "Arms", "Method", "Source", "Conditions"];
  return [`::: details ${title} (${list.length})`, "", table(headers, rows), "", ":::"].join("\n");
}

/** Every record of the port, figures first and A/B trials apart, each list collapsed. */
function recordsTable(port: LoadedPort): string {
  if (port.records.length === 0) return "### Records\n\nNo records yet.";
  const trials = port.records.filter(isTrial);
  const figures = port.records.filter((record) => !isTrial(record));
  const parts = ["### Records", "", collapsedRecords(port, "Figures", figures)];
  if (trials.length > 0) parts.push("", collapsedRecords(port, "Trials of the A/Bs", trials));
  return parts.join("\n");
}

function chartImage(chart: SiteChart): string {
  return `![${text(chart.caption)}](/charts/${chart.file}){data-record="${chart.record}" data-method="${chart.method}"}`;
}

/**
 * The charts, each image carrying its record and method: every run of each reference series, the
 * latest run's trials and the latest throughput-latency sweep in view (every `bringup up` adds a
 * sweep), the chart of every other measured A/B and of earlier sweeps collapsed below them.
 */
function chartsSection(port: LoadedPort, charts: readonly SiteChart[]): string[] {
  if (charts.length === 0) return [];
  const shown = new Set(
    (port.manifest.reference?.benchmarks ?? []).map((ab) => latestInSeries(port.records, ab.record)?.id),
  );
  // Sweep ids end in their start time (sweep-<yyyymmdd>-<hhmmss>), so the greatest is the latest.
  const latestSweep = charts
    .map((chart) => chart.file)
    .filter((file) => file.endsWith(".sweep.svg"))
    .sort()
    .at(-1);
  const inView = charts.filter(
    (chart) => chart.file.endsWith(".runs.svg") || chart.file === latestSweep || shown.has(chart.record),
  );
  const others = charts.filter((chart) => !inView.includes(chart));
  const parts = ["### Charts", "", ...inView.map((chart) => `${chartImage(chart)}\n`)];
  if (others.length > 0) {
    parts.push(
      `::: details Every other measured A/B and sweep (${others.length})`,
      "",
      others.map(chartImage).join("\n\n"),
      "",
      ":::",
      "",
    );
  }
  return parts;
}

function referenceRunSection(port: LoadedPort): string[] {
  return [renderReferenceRun(port), renderDeviceCheck(port)].flatMap((section) =>
    section === undefined ? [] : [section, ""],
  );
}

/** A port's page: its README with figures filled in, then the manifest's facts and every record. */
export function renderPortPage(
  port: LoadedPort,
  records: Map<string, IndexedRecord>,
  charts: readonly SiteChart[] = [],
): string {
  const readme = renderFigureRefs(port.readme, records, `${port.dir}/README.md`, portPage(port.id)).trim();
  const title = /^#\s/.test(readme) ? [] : [`# ${text(port.manifest.model.name)}`, ""];
  const [heading, ...rest] = readme.split("\n");
  const opening = /^#\s/.test(readme) ? [heading ?? "", ""] : [];
  const prose = /^#\s/.test(readme) ? rest.join("\n").trim() : readme;
  const body = [
    ...title,
    ...opening,
    ...headlineCards(port, records),
    prose,
    "",
    facts(port),
    "",
    ...lineage(port),
    features(port),
    "",
    gates(port, records),
    "",
    ...referenceRunSection(port),
    renderRecipe(port),
    "",
    ...chartsSection(port, charts),
    recordsTable(port),
  ].join("\n");
  return frontMatter({ title: port.manifest.model.name }) + vPre(body);
}
