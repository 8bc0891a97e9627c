import type { AbResult } from "./ab.js";
import type { RunMetrics } from "./metrics.js";

/** A figure of a run as one table row: name, value, unit. Shared by the terminal table and the markdown report. */
export type Row = readonly [string, string, string];

const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : "-");

const tokensApart = (n: number) => `${n} token${n === 1 ? "" : "s"}`;

/** The figures of one run, in the order vLLM's bench serve prints them. */
export function metricRows(metrics: RunMetrics, percentileMetrics: readonly string[]): Row[] {
  const rows: Row[] = [
    ["successful requests", String(metrics.completed), "count"],
    ["failed requests", String(metrics.failed), "count"],
    ...Object.entries(metrics.failures).map(
      ([reason, n]): Row => [`  failed: ${reason}`, String(n), "count"],
    ),
    ["duration", fixed(metrics.durationS), "s"],
    ["total input tokens", String(metrics.totalInputTokens), "tokens"],
    ["total output tokens", String(metrics.totalOutputTokens), "tokens"],
    ["request throughput", fixed(metrics.requestThroughput), "req/s"],
    ["output token throughput", fixed(metrics.outputThroughput), "tok/s"],
    ["total token throughput", fixed(metrics.totalTokenThroughput), "tok/s"],
    ["prefill throughput", fixed(metrics.prefillThroughput), "tok/s"],
    ...(metrics.goodput !== undefined ? [["goodput", fixed(metrics.goodput), "req/s"] as Row] : []),
    ["median decode per stream", fixed(metrics.decode.median), "tok/s"],
  ];
  for (const name of ["ttft", "tpot", "itl", "e2el"] as const) {
    if (!percentileMetrics.includes(name)) continue;
    const s = metrics[name];
    rows.push(
      [`mean ${name.toUpperCase()}`, fixed(s.mean), "ms"],
      [`median ${name.toUpperCase()}`, fixed(s.median), "ms"],
    );
    for (const [p, value] of Object.entries(s.percentiles))
      rows.push([`P${p} ${name.toUpperCase()}`, fixed(value), "ms"]);
  }
  // Two checks of the output token counts the throughput figures rest on.
  const check = metrics.tokenCheck;
  rows.push([
    "requests whose usage differs from the tokens streamed",
    `${check.streamMismatches} of ${metrics.completed}`,
    "requests",
  ]);
  if (check.tokenizerMismatches !== undefined) {
    rows.push([
      "requests whose usage differs from /tokenize of their text",
      `${check.tokenizerMismatches} of ${metrics.completed}, ${tokensApart(check.tokenizerAbsDifference ?? 0)} apart in all (re-tokenizing decoded text can merge or split tokens)`,
      "requests",
    ]);
  }
  if (check.withoutUsage > 0) rows.push(["requests without usage", String(check.withoutUsage), "count"]);
  return rows;
}

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map((c) => c.replace(/\|/g, "\\|")).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** The markdown report of a run or a sweep, with its charts beside it. */
export function runReportMarkdown(input: {
  title: string;
  endpoint: string;
  model: string;
  workload: string;
  command?: string;
  points: readonly { load: string; metrics: RunMetrics }[];
  percentileMetrics: readonly string[];
  charts: readonly { file: string; caption: string }[];
  recordIds: readonly string[];
}): string {
  const parts = [
    `# ${input.title}`,
    "",
    `Endpoint ${input.endpoint}, model \`${input.model}\`, workload ${input.workload}. Method: single-run (one arm, no comparison).`,
    ...(input.command ? ["", `Command: \`${input.command}\``] : []),
  ];
  for (const point of input.points) {
    parts.push(
      "",
      `## ${point.load}`,
      "",
      markdownTable(["figure", "value", "unit"], metricRows(point.metrics, input.percentileMetrics)),
    );
  }
  for (const chart of input.charts) parts.push("", `![${chart.caption}](${chart.file})`);
  if (input.recordIds.length > 0)
    parts.push("", `Records: ${input.recordIds.map((id) => `\`${id}\``).join(", ")}.`);
  return `${parts.join("\n")}\n`;
}

/** The markdown report of an A/B: each arm's trials, the paired ratios, the interval, the method. */
export function abReportMarkdown(input: {
  result: AbResult;
  names: { a: string; b: string };
  unit: string;
  chart?: string;
  command?: string;
}): string {
  const { result, names } = input;
  const trials = result.trials.map((t, i) => [
    String(i + 1),
    String(t.block + 1),
    names[t.arm],
    fixed(t.value, 3),
  ]);
  const i = result.interval;
  const parts = [
    `# A/B: ${names.b} against ${names.a} (${result.metric})`,
    "",
    `Method: ${result.method}, ${result.ratios.length} ABBA blocks. Ratio ${fixed(i.estimate, 3)}x, 95% interval ${fixed(i.low, 3)}x to ${fixed(i.high, 3)}x, CV of the block ratios ${fixed(result.cv * 100, 1)}%. Above 1, ${names.b} is better (${result.better} ${result.metric} is better).`,
    ...(input.command ? ["", `Command: \`${input.command}\``] : []),
    "",
    markdownTable(["trial", "block", "arm", `${result.metric} (${input.unit})`], trials),
    "",
    markdownTable(
      ["block", "ratio"],
      result.ratios.map((r, b) => [String(b + 1), fixed(r, 4)]),
    ),
    ...(input.chart ? ["", `![block ratios with the 95% interval](${input.chart})`] : []),
    ...(result.record ? ["", `Record: \`${result.record.id}\`.`] : []),
  ];
  return `${parts.join("\n")}\n`;
}
