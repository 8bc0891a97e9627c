import { sweepRecordId, type VegaSpec, vegaSvg } from "../bench/index.js";
import type { BenchRecord } from "../records/index.js";
import { axisTitle, CHART_WIDTH, COLORS, READABLE, type SiteChart } from "./charts.js";
import { median } from "./figure.js";

/** One arm at one concurrency: output tok/s against median TTFT and TPOT. */
interface SweepPointFigures {
  arm: string;
  concurrency: number;
  throughput?: number;
  ttft?: number;
  tpot?: number;
  /** The point's output tok/s record, which the chart names. */
  record?: BenchRecord;
}

/** The points of each sweep among `records`, by sweep id, from the records' ids (see sweepRecords). */
function sweepPoints(records: readonly BenchRecord[]): Map<string, SweepPointFigures[]> {
  const sweeps = new Map<string, Map<string, SweepPointFigures>>();
  for (const record of records) {
    const parts = sweepRecordId(record.id);
    const samples = record.arms[0]?.samples ?? [];
    if (parts === undefined || samples.length === 0) continue;
    const points = sweeps.get(parts.sweep) ?? new Map<string, SweepPointFigures>();
    sweeps.set(parts.sweep, points);
    const key = `${parts.arm} ${parts.concurrency}`;
    const point = points.get(key) ?? {
      arm: record.context?.split(",")[0] ?? parts.arm,
      concurrency: parts.concurrency,
    };
    points.set(key, point);
    if (parts.metric === "output-throughput") {
      point.throughput = samples[0];
      point.record = record;
    } else if (parts.metric === "ttft-ms") point.ttft = median(samples);
    else if (parts.metric === "tpot-ms") point.tpot = median(samples);
  }
  return new Map(
    [...sweeps].map(([id, points]) => [
      id,
      [...points.values()]
        .filter((p) => p.throughput !== undefined && p.ttft !== undefined && p.tpot !== undefined)
        .sort((a, b) => a.arm.localeCompare(b.arm) || a.concurrency - b.concurrency),
    ]),
  );
}

/** One panel: output tok/s (y) against a latency field (x), a line per arm through its concurrencies. */
function panel(field: "ttft" | "tpot", title: string, top: number): VegaSpec {
  const data = `points-${field}`;
  return {
    type: "group",
    encode: { enter: { y: { value: top }, width: { signal: "width" }, height: { value: 170 } } },
    data: [
      { name: data, source: "points", transform: [{ type: "filter", expr: `isValid(datum.${field})` }] },
    ],
    scales: [
      { name: "x", type: "linear", domain: { data, field }, range: "width", nice: true, zero: true },
      {
        name: "y",
        type: "linear",
        domain: { data, field: "throughput" },
        range: [170, 0],
        nice: true,
        zero: true,
      },
    ],
    axes: [
      { orient: "bottom", scale: "x", title, tickCount: 5, ...axisTitle },
      { orient: "left", scale: "y", title: "output tok/s", tickCount: 5, ...axisTitle },
    ],
    marks: [
      {
        type: "group",
        from: { facet: { name: `${data}-arm`, data, groupby: "arm" } },
        marks: [
          {
            type: "line",
            from: { data: `${data}-arm` },
            encode: {
              enter: {
                x: { scale: "x", field },
                y: { scale: "y", field: "throughput" },
                stroke: { scale: "color", field: "arm" },
                strokeWidth: { value: 2 },
              },
            },
          },
          {
            type: "symbol",
            from: { data: `${data}-arm` },
            encode: {
              enter: {
                x: { scale: "x", field },
                y: { scale: "y", field: "throughput" },
                fill: { scale: "color", field: "arm" },
                size: { value: 60 },
              },
            },
          },
          {
            type: "text",
            from: { data: `${data}-arm` },
            encode: {
              enter: {
                x: { scale: "x", field, offset: 6 },
                y: { scale: "y", field: "throughput", offset: -6 },
                text: { signal: "'c' + datum.concurrency" },
                fontSize: { value: 14 },
                fill: { value: "#333" },
              },
            },
          },
        ],
      },
    ],
  };
}

/**
 * Each throughput-latency sweep as GuideLLM and AIPerf draw it: output tok/s against median TTFT
 * (top) and median TPOT (bottom), one line per arm through its concurrencies (labelled c1, c2, ...).
 * The chart names the sweep's first output tok/s record; every point is a single-run record. A
 * sweep whose records are in `local` (a run not yet published) says so in its title and caption.
 */
export async function sweepCharts(
  records: readonly BenchRecord[],
  local: ReadonlySet<string> = new Set(),
): Promise<SiteChart[]> {
  const charts: SiteChart[] = [];
  for (const [id, points] of sweepPoints(records)) {
    const first = points[0]?.record;
    if (first === undefined) continue;
    const unpublished = local.has(first.id) ? " (local run, not published)" : "";
    const arms = [...new Set(points.map((p) => p.arm))];
    const spec: VegaSpec = {
      width: CHART_WIDTH,
      height: 480,
      config: READABLE,
      title: {
        text: ["throughput against latency,", `${id.slice(id.indexOf("/") + 1)}${unpublished}`],
        fontWeight: "normal",
      },
      data: [{ name: "points", values: points.map(({ record: _record, ...point }) => point) }],
      scales: [{ name: "color", type: "ordinal", domain: arms, range: COLORS }],
      legends: [
        {
          fill: "color",
          title: "arm",
          orient: "top",
          direction: "vertical",
          labelLimit: CHART_WIDTH,
          ...axisTitle,
        },
      ],
      marks: [
        panel("ttft", "median time to first token, ms", 0),
        panel("tpot", "median time per output token, ms", 250),
      ],
    };
    charts.push({
      file: `${id}.sweep.svg`,
      record: first.id,
      method: first.method,
      caption: `output tokens per second against median TTFT and TPOT at each concurrency, for each arm of sweep ${id}${unpublished} (single-run records, both arms in one run)`,
      svg: await vegaSvg(spec),
    });
  }
  return charts;
}
