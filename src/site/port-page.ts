import type { LoadedPort } from "../catalog/index.js";
import { FEATURES } from "../catalog/index.js";
import type { BenchRecord } from "../records/index.js";
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
  formatConditions,
  formatFigure,
  formatRecordFigure,
  formatValue,
  methodName,
} from "./figure.js";
import { renderHeadlineItem } from "./headline.js";
import { code, frontMatter, table, text, vPre } from "./markdown.js";
import { renderFigureRefs } from "./readme.js";
import { renderRecipe } from "./recipe.js";
import { type IndexedRecord, requireRecord } from "./record-index.js";
import { localMark, renderReferenceRun } from "./reference-run.js";

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
  const image = software.base_image === undefined ? "" : `; base image ${code(software.base_image)}`;
  lines.push(
    `- **Software.** ${text(`Gaudi software ${software.gaudi_software}`)}${image}; ${text(EXECUTION_MODE_LABELS[software.execution_mode])}; HPU graphs ${software.hpu_graphs ? "on" : "off"}`,
    `- **Cookbook kernels.** ${manifest.cookbook_kernels.length > 0 ? manifest.cookbook_kernels.map(code).join(", ") : "none"}`,
    `- **Status.** ${text(statusText(manifest.status))}`,
  );
  return lines.join("\n");
}

function features(port: LoadedPort): string {
  if (port.manifest.hard.features.length === 0) return "### Features\n\nNone listed.";
  const rows = port.manifest.hard.features.map((id) => [code(id), text(FEATURES[id])]);
  return ["### Features", "", table(["Feature", "What it is"], rows)].join("\n");
}

function gates(port: LoadedPort, records: Map<string, IndexedRecord>): string {
  if (port.manifest.gates.length === 0) return "### Gates\n\nNo gates declared yet.";
  const rows = port.manifest.gates.map((gate) => {
    const result =
      gate.record === undefined
        ? NONE
        : text(
            formatRecordFigure(requireRecord(records, gate.record, `${port.dir}/port.yaml (gates)`).record),
          );
    return [text(GATE_NAMES[gate.kind]), text(gateThreshold(gate)), result];
  });
  return ["### Gates", "", table(["Gate", "Passes when", "Result"], rows)].join("\n");
}

function headline(port: LoadedPort, records: Map<string, IndexedRecord>): string {
  if (port.manifest.headline.length === 0) return "### Headline\n\nNo headline figures yet.";
  const items = port.manifest.headline.map((item) => `- ${renderHeadlineItem(item, port, records)}`);
  return ["### Headline", "", ...items].join("\n");
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

function source(record: BenchRecord): string {
  if (record.source.kind === "reported") {
    return `reported by ${record.source.where}; stated method: ${record.source.stated_method}`;
  }
  return `measured with ${record.source.tool}${record.source.command === undefined ? "" : ` (${record.source.command})`}`;
}

function recordsTable(port: LoadedPort): string {
  if (port.records.length === 0) return "### Records\n\nNo records yet.";
  const rows = port.records.map((record) => [
    code(record.id),
    text(record.label),
    text(formatValue(record)),
    text(arms(record)),
    text(methodName(record)),
    text(`${source(record)}${localMark(port, record)}`),
    record.method === "different-conditions" ? text(formatConditions(record)) : NONE,
  ]);
  const headers = ["Record", "What", "Figure", "Arms", "Method", "Source", "Conditions"];
  return ["### Records", "", table(headers, rows)].join("\n");
}

function referenceRunSection(port: LoadedPort): string[] {
  const section = renderReferenceRun(port);
  return section === undefined ? [] : [section, ""];
}

/** A port's page: its README with figures filled in, then the manifest's facts and every record. */
export function renderPortPage(port: LoadedPort, records: Map<string, IndexedRecord>): string {
  const readme = renderFigureRefs(port.readme, records, `${port.dir}/README.md`).trim();
  const title = /^#\s/.test(readme) ? [] : [`# ${text(port.manifest.model.name)}`, ""];
  const body = [
    ...title,
    readme,
    "",
    facts(port),
    "",
    features(port),
    "",
    gates(port, records),
    "",
    ...referenceRunSection(port),
    renderRecipe(port),
    "",
    headline(port, records),
    "",
    recordsTable(port),
  ].join("\n");
  return frontMatter({ title: port.manifest.model.name }) + vPre(body);
}
