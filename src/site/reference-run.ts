import {
  abArmNames,
  figureRefs,
  type LoadedPort,
  latestInSeries,
  referenceSeries,
} from "../catalog/index.js";
import type { BenchRecord } from "../records/index.js";
import { GATE_NAMES, gateThreshold } from "./facts.js";
import { figureLink, formatRecordFigure, formatTokens } from "./figure.js";
import { code, table, text } from "./markdown.js";
import { portPage } from "./paths.js";
import { citedFigure } from "./series.js";

const NOT_YET = "not measured yet";

/** "window-sized against full KV layout", or "b against a" when the arms differ in more than the layout. */
function armsAgainst(names: { a: string; b: string }): string {
  const layout = " KV layout";
  return names.a.endsWith(layout) && names.b.endsWith(layout)
    ? `${names.b.slice(0, -layout.length)} against ${names.a}`
    : `${names.b} against ${names.a}`;
}

/** Marks a record of a local, unpublished run on a preview built with local records. */
export function localMark(port: LoadedPort, record: BenchRecord): string {
  return port.localRecords?.has(record.id) ? " (local run, not published)" : "";
}

/**
 * The run of a series a page shows: the one its prose cites (the highest, if it cites several),
 * so that the prose and the table show one record; else the latest.
 */
export function shownInSeries(port: LoadedPort, series: string): BenchRecord | undefined {
  const cited = new Set(figureRefs(port.readme).map((ref) => ref.id));
  return (
    latestInSeries(
      port.records.filter((record) => cited.has(record.id)),
      series,
    ) ?? latestInSeries(port.records, series)
  );
}

/** The Result and Record cells of a series: the run the page shows, linked, or "not measured yet". */
export function recordCells(port: LoadedPort, id: string): [string, string] {
  const record = shownInSeries(port, id);
  if (record === undefined) return [NOT_YET, code(id)];
  const latest = latestInSeries(port.records, id);
  const newer = latest !== undefined && latest !== record ? `; newer run ${code(latest.id)} in Records` : "";
  return [
    figureLink(
      text(citedFigure(port.records, record, (r) => `${formatRecordFigure(r)}${localMark(port, r)}`)),
      record,
      portPage(port.id),
    ),
    `${code(record.id)}${newer}`,
  ];
}

/**
 * The port's reference run: each gate and A/B of its reference section (what `bringup up` runs on
 * the tiny reference config) with the latest measured record, its method and interval; nothing
 * when the manifest has no reference section.
 */
export function renderReferenceRun(port: LoadedPort): string | undefined {
  const reference = port.manifest.reference;
  if (reference === undefined) return undefined;
  const series = referenceSeries(port.manifest);
  const cell = (id: string) => recordCells(port, id);
  const rows = [
    ...reference.gates.map((gate, index) => [
      text(
        `${GATE_NAMES[gate.kind]}${gate.kind === "needles" && gate.model === "retrieval" ? " (retrieval variant)" : ""}`,
      ),
      text(gateThreshold(gate)),
      ...cell(series.gates[index] as string),
    ]),
    ...reference.benchmarks.map((ab) => [
      text(`A/B: ${ab.metric}, ${armsAgainst(abArmNames(ab, reference))}`),
      text(
        `${formatTokens(ab.prompt_tokens)}-token prompts, ${ab.output_tokens} output tokens, ${ab.requests} per trial, ${ab.blocks} ABBA blocks`,
      ),
      ...cell(ab.record),
    ]),
  ];
  const baseline = reference.baseline
    ? ` against the ${reference.baseline.kv_layout} layout as baseline`
    : "";
  return [
    "### Reference run",
    "",
    text(
      `bringup up ${port.id} runs the port's tiny reference config on the embedded CPU engine: the ${reference.kv_layout} KV layout${baseline}, at max_model_len ${formatTokens(reference.max_model_len)}. Each row shows the run the text above cites, else the latest.`,
    ),
    "",
    table(["Check", "Passes when, or setup", "Result", "Record"], rows),
  ].join("\n");
}
