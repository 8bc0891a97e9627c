/**
 * Checks a built site against the catalog it was built from. Expectations come from the manifests
 * and records (their names, numbers, methods and conditions), never from copies of the output.
 */
import { existsSync, readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type CheerioAPI, load } from "cheerio";
import { expect } from "vitest";
import { type Catalog, FEATURES, type LoadedPort } from "../../catalog/index.js";
import type { BenchRecord, Figure } from "../../records/index.js";
import { EXECUTION_MODE_LABELS } from "../facts.js";
import { formatRecordFigure, formatTokens, formatValue, METHOD_LABELS } from "../figure.js";

export async function loadPage(outDir: string, page: string): Promise<CheerioAPI> {
  return load(await readFile(join(outDir, page), "utf8"));
}

export function clean(value: string): string {
  return value
    .replace(/\s+/g, " ")
    .replace(/\u200b/g, "")
    .trim();
}

/** The rows of the table whose header cells are `headers`, as cell texts and the first cell's link. */
export function tableRows($: CheerioAPI, headers: readonly string[]): { cells: string[]; href?: string }[] {
  // Every table with these headers, in page order (a long list may be split, e.g. figures and trials).
  const tables = $(".vp-doc table")
    .toArray()
    .filter((t) => {
      const found = $(t)
        .find("thead th")
        .toArray()
        .map((th) => clean($(th).text()));
      return JSON.stringify(found) === JSON.stringify(headers);
    });
  expect(tables.length, `a table headed ${headers.join(" | ")}`).toBeGreaterThan(0);
  return $(tables)
    .find("tbody tr")
    .toArray()
    .map((tr) => ({
      cells: $(tr)
        .find("td")
        .toArray()
        .map((td) => clean($(td).text())),
      href: $(tr).find("td").first().find("a").attr("href"),
    }));
}

/** The numbers a figure states, as a reader would see them written. */
function figureNumbers(figure: Figure, unit: BenchRecord["unit"]): string[] {
  const write = (value: number) => (unit === "tokens" ? formatTokens(value) : String(value));
  switch (figure.shape) {
    case "point":
    case "at-most":
    case "at-least":
      return [write(figure.value)];
    case "range":
      return [write(figure.low), write(figure.high)];
    case "fraction":
      return [`${figure.passed}/${figure.total}`];
  }
}

/** Everything a rendered record must show: its stated numbers, unit, method and named conditions. */
export function expectRecordShown(cell: string, record: BenchRecord): void {
  for (const arm of record.arms) {
    if (arm.figure !== undefined) {
      for (const number of figureNumbers(arm.figure, record.unit)) expect(cell).toContain(number);
    }
  }
  if (record.unit !== "count") expect(cell).toContain(record.unit);
  expect(cell).toContain(METHOD_LABELS[record.method]);
  for (const condition of record.conditions ?? []) {
    for (const part of [condition.name, condition.a, condition.b]) expect(cell).toContain(clean(part));
  }
  if (record.source.kind === "reported" && record.method !== "reported") expect(cell).toContain("reported");
  if (record.context !== undefined) expect(cell).toContain(clean(record.context));
  expect(cell).toContain(clean(formatRecordFigure(record)));
}

function recordOf(catalog: Catalog, id: string): BenchRecord {
  const record = catalog.ports.flatMap((port) => port.records).find((r) => r.id === id);
  expect(record, `record ${id}`).toBeDefined();
  return record as BenchRecord;
}

/** The Ports index: one row per port, in catalog order, with its facts and every headline figure. */
export function expectIndex($: CheerioAPI, catalog: Catalog): void {
  const rows = tableRows($, ["Model", "What made it hard", "Runs on", "Headline"]);
  expect(rows).toHaveLength(catalog.ports.length);
  for (const [index, port] of catalog.ports.entries()) {
    const row = rows[index];
    expect(row, port.id).toBeDefined();
    const [model = "", hard = "", runsOn = "", headline = ""] = row?.cells ?? [];
    const { manifest } = port;
    expect(model).toContain(manifest.model.name);
    expect(row?.href).toMatch(new RegExp(`ports/${port.id.replaceAll(".", "\\.")}\\.html$`));
    for (const format of manifest.model.weight_formats ?? []) expect(model).toContain(format.toUpperCase());
    expect(hard).toBe(clean(manifest.hard.summary));
    expect(runsOn).toContain(`${manifest.target.cards} card`);
    expect(runsOn).toContain(`${manifest.target.nodes} node`);
    for (const variant of manifest.target.variants) {
      expect(runsOn).toContain(variant.name);
      expect(runsOn).toContain(`${variant.cards} card`);
      expect(runsOn).toContain(`${variant.nodes} node`);
    }
    if (manifest.target.variants.some((v) => v.documented)) expect(runsOn).toContain("documented");
    for (const item of manifest.headline) {
      if ("text" in item) {
        expect(headline).toContain(clean(item.text));
      } else {
        const record = recordOf(catalog, item.record);
        expect(headline).toContain(clean(record.label));
        expectRecordShown(headline, record);
      }
    }
  }
}

/** A port's page: README prose with every figure filled in, the facts, gates and all records. */
export function expectPortPage($: CheerioAPI, catalog: Catalog, port: LoadedPort): void {
  const doc = clean($(".vp-doc").text());
  // References inside code stay as written; everywhere else each one became a figure.
  expect(clean($(".vp-doc").clone().find("code, pre").remove().end().text())).not.toContain("[[fig:");
  for (const [, id] of port.readme.matchAll(/\[\[fig:([^\]]+)\]\]/g)) {
    expect(doc).toContain(clean(formatValue(recordOf(catalog, (id ?? "").trim()))));
  }
  for (const feature of port.manifest.hard.features) {
    expect(doc).toContain(feature);
    expect(doc).toContain(FEATURES[feature]);
  }
  expect(doc).toContain(port.manifest.software.gaudi_software);
  expect(doc).toContain(port.manifest.status.state);
  for (const gate of port.manifest.gates) {
    if (gate.kind === "needles") expect(doc).toContain(`${gate.min_retrieved} of ${gate.needles}`);
    if (gate.kind === "kv-capacity") expect(doc).toContain(`${gate.expected_ratio}x`);
    if (gate.kind === "weights-bit-identity") expect(doc).toContain(clean(gate.conversion));
    if (gate.kind === "perplexity") expect(doc).toContain(clean(gate.reference));
  }
  if (port.records.length === 0) return;
  const rows = tableRows($, ["Record", "What", "Figure", "Arms", "Method", "Source", "Conditions"]);
  // Figures first, then the trials of the A/Bs, each in store order.
  const trial = (id: string) => /-t[0-9]{3}-[ab]$/.test(id);
  const ordered = [
    ...port.records.filter((record) => !trial(record.id)),
    ...port.records.filter((record) => trial(record.id)),
  ];
  expect(rows.map((row) => row.cells[0])).toEqual(ordered.map((record) => record.id));
  for (const [index, record] of ordered.entries()) {
    const [, label = "", , arms = "", method = "", source = "", conditions = ""] = rows[index]?.cells ?? [];
    expect(label).toBe(clean(record.label));
    for (const arm of record.arms) expect(arms).toContain(clean(arm.name));
    expect(method).toContain(METHOD_LABELS[record.method]);
    // A reported figure states its method; its source is cited only when a reader can open it.
    if (record.source.kind === "reported") {
      expect(source).toContain(clean(record.source.stated_method));
      if (/^https?:\/\//.test(record.source.where)) expect(source).toContain(record.source.where);
      else expect(source).not.toContain(clean(record.source.where));
    } else expect(source).toContain(record.source.tool);
    for (const condition of record.conditions ?? []) {
      for (const part of [condition.name, condition.a, condition.b])
        expect(conditions).toContain(clean(part));
    }
  }
}

/** The common-ground and availability sections of the index. */
export function expectSections($: CheerioAPI, catalog: Catalog): void {
  const section = (title: string) => {
    const heading = $(".vp-doc h2")
      .toArray()
      .find((h) => clean($(h).text()) === title);
    expect(heading, title).toBeDefined();
    return $(heading).nextUntil("h2");
  };
  const common = section("What the ports have in common")
    .find("li")
    .toArray()
    .map((li) => clean($(li).text()));
  const line = (start: string) => common.find((text) => text.startsWith(start)) ?? "";
  for (const port of catalog.ports) {
    expect(line("Gaudi software.")).toContain(port.manifest.software.gaudi_software);
  }
  const all = catalog.ports.length;
  const mentions = (text: string, port: LoadedPort) =>
    text.includes(port.manifest.model.name) || text.includes(`every port (${all})`);
  const kernels = line("The MXFP4 MoE kernels.");
  for (const port of catalog.ports) {
    const uses = port.manifest.cookbook_kernels.includes("mxfp4-moe-decode");
    if (uses) expect(mentions(kernels, port), port.id).toBe(true);
    else expect(kernels).not.toContain(port.manifest.model.name);
  }
  const modes = line("Execution modes.");
  const lazy = modes.indexOf(`in ${EXECUTION_MODE_LABELS.lazy}`);
  const compiled = modes.indexOf(`in ${EXECUTION_MODE_LABELS["torch-compile-static"]}`);
  for (const port of catalog.ports) {
    const at = modes.indexOf(port.manifest.model.name);
    const mode = port.manifest.software.execution_mode;
    const start = mode === "lazy" ? lazy : compiled;
    const other = mode === "lazy" ? compiled : lazy;
    expect(start, `${port.id} under its mode`).toBeGreaterThanOrEqual(0);
    if (at >= 0) expect(at > start && (other < start || at < other), port.id).toBe(true);
  }
  const available = section("Availability")
    .find("li")
    .toArray()
    .map((li) => clean($(li).text()));
  expect(available).toHaveLength(catalog.ports.length);
  for (const [index, port] of catalog.ports.entries()) {
    const text = available[index] ?? "";
    expect(text).toContain(port.manifest.model.name);
    expect(text).toContain(`ports/${port.id}/`);
    const resultsDir = join(port.dir, "results");
    const results = existsSync(resultsDir)
      ? readdirSync(resultsDir, { withFileTypes: true }).filter((f) => f.isFile())
      : [];
    for (const file of results) expect(text).toContain(`results/${file.name}`);
  }
}
