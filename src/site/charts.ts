import { type VegaSpec, vegaSvg } from "../bench/index.js";
import { latestInSeries } from "../catalog/index.js";
import type { BenchRecord } from "../records/index.js";

/** A chart the site shows, drawn from records only: its file name under charts/ and what it shows. */
export interface SiteChart {
  /** `<port>/<slug>.svg`, unique in the site. */
  readonly file: string;
  /** The record the chart draws (for a series chart, the latest run). */
  readonly record: string;
  readonly method: string;
  readonly caption: string;
  readonly svg: string;
}

const COLORS = ["#4c78a8", "#f58518"];
const axisTitle = { titleFontWeight: "normal", titleFontSize: 11 };

/**
 * The marks of ratios with their intervals on a log x scale: a dashed rule at 1 (no difference),
 * each interval (fields low, high) as a line and each ratio (field ratio) as a dot.
 */
function intervalMarks(options: {
  data: string;
  x: string;
  y: Record<string, unknown>;
  height: Record<string, unknown>;
  color: string;
}): VegaSpec[] {
  const { data, x, y, height, color } = options;
  return [
    {
      type: "rule",
      encode: {
        enter: {
          x: { scale: x, value: 1 },
          y: { value: 0 },
          y2: height,
          stroke: { value: "#888" },
          strokeDash: { value: [4, 3] },
        },
      },
    },
    {
      type: "rule",
      from: { data },
      encode: {
        enter: {
          x: { scale: x, field: "low" },
          x2: { scale: x, field: "high" },
          y,
          stroke: { value: color },
          strokeWidth: { value: 2 },
        },
      },
    },
    {
      type: "symbol",
      from: { data },
      encode: { enter: { x: { scale: x, field: "ratio" }, y, fill: { value: color }, size: { value: 55 } } },
    },
  ];
}

/** A measured comparison: two arms with samples and a ratio with its interval. */
function isMeasuredAb(record: BenchRecord): boolean {
  return (
    record.source.kind === "measured" &&
    record.arms.length === 2 &&
    record.arms.every((arm) => arm.samples.length > 0) &&
    record.comparison?.figure.shape === "point" &&
    record.comparison.ci95 !== undefined
  );
}

/**
 * One measured A/B: every trial of each arm in the order it was measured (top), and the ratio with
 * its 95% interval against 1 (bottom).
 */
export async function abRecordChart(record: BenchRecord): Promise<SiteChart> {
  const comparison = record.comparison;
  if (comparison?.figure.shape !== "point" || comparison.ci95 === undefined) {
    throw new Error(`${record.id} is not a measured A/B`);
  }
  const trials = record.arms.flatMap((arm) =>
    arm.samples.map((value, index) => ({ arm: arm.name, trial: index + 1, value })),
  );
  const [low, high] = comparison.ci95;
  const ratio = comparison.figure.value;
  const span = [low, high, ratio, 1];
  const spec: VegaSpec = {
    width: 460,
    height: 250,
    title: { text: record.id, fontSize: 12, fontWeight: "normal" },
    data: [
      { name: "trials", values: trials },
      { name: "ratio", values: [{ ratio, low, high }] },
    ],
    scales: [
      {
        name: "color",
        type: "ordinal",
        domain: record.arms.map((arm) => arm.name),
        range: COLORS,
      },
    ],
    legends: [
      { fill: "color", title: "arm", orient: "top", direction: "horizontal", labelLimit: 320, ...axisTitle },
    ],
    marks: [
      {
        type: "group",
        encode: { enter: { width: { signal: "width" }, height: { value: 150 } } },
        scales: [
          {
            name: "x",
            type: "point",
            domain: { data: "trials", field: "trial" },
            range: "width",
            padding: 0.5,
          },
          {
            name: "y",
            type: "linear",
            domain: { data: "trials", field: "value" },
            range: [150, 0],
            nice: true,
            zero: true,
          },
        ],
        axes: [
          { orient: "bottom", scale: "x", title: "trial of each arm, in order", ...axisTitle },
          { orient: "left", scale: "y", title: record.unit, ...axisTitle },
        ],
        marks: [
          {
            type: "symbol",
            from: { data: "trials" },
            encode: {
              enter: {
                x: { scale: "x", field: "trial" },
                y: { scale: "y", field: "value" },
                fill: { scale: "color", field: "arm" },
                size: { value: 45 },
                fillOpacity: { value: 0.8 },
              },
            },
          },
        ],
      },
      {
        type: "group",
        encode: { enter: { y: { value: 200 }, width: { signal: "width" }, height: { value: 30 } } },
        scales: [
          {
            name: "r",
            type: "log",
            domain: [Math.min(...span) / 1.1, Math.max(...span) * 1.1],
            range: "width",
            nice: false,
          },
        ],
        axes: [
          {
            orient: "bottom",
            scale: "r",
            title: "ratio with its 95% interval (dashed: 1, no difference)",
            ...axisTitle,
          },
        ],
        marks: intervalMarks({
          data: "ratio",
          x: "r",
          y: { value: 15 },
          height: { value: 30 },
          color: "#333",
        }),
      },
    ],
  };
  return {
    file: `${record.id}.svg`,
    record: record.id,
    method: record.method,
    caption: `every trial of each arm and the ratio with its 95% interval, from record ${record.id}`,
    svg: await vegaSvg(spec),
  };
}

/** Every run of a measured series: each run's ratio with its 95% interval, so the spread between runs shows. */
export async function seriesChart(
  records: readonly BenchRecord[],
  series: string,
): Promise<SiteChart | undefined> {
  const runs = records.filter(
    (record) => (record.id === series || record.id.startsWith(`${series}.`)) && isMeasuredAb(record),
  );
  const latest = latestInSeries(runs, series);
  if (runs.length < 2 || latest === undefined) return undefined;
  const values = runs.map((record) => {
    const comparison = record.comparison as NonNullable<BenchRecord["comparison"]>;
    const [low, high] = comparison.ci95 as [number, number];
    return {
      run: record.id.slice(series.length) || "(first)",
      ratio: comparison.figure.shape === "point" ? comparison.figure.value : Number.NaN,
      low,
      high,
    };
  });
  const span = values.flatMap((v) => [v.low, v.high, 1]);
  const spec: VegaSpec = {
    width: 460,
    height: 24 * values.length + 20,
    title: { text: `every run of ${series}`, fontSize: 12, fontWeight: "normal" },
    data: [{ name: "runs", values }],
    scales: [
      { name: "x", type: "log", domain: [Math.min(...span) / 1.1, Math.max(...span) * 1.1], range: "width" },
      { name: "y", type: "band", domain: { data: "runs", field: "run" }, range: "height", padding: 0.3 },
    ],
    axes: [
      { orient: "bottom", scale: "x", title: "ratio with its 95% interval (dashed: 1)", ...axisTitle },
      { orient: "left", scale: "y", title: "run", ...axisTitle },
    ],
    marks: intervalMarks({
      data: "runs",
      x: "x",
      y: { scale: "y", field: "run", band: 0.5 },
      height: { signal: "height" },
      color: COLORS[0] as string,
    }),
  };
  return {
    file: `${series}.runs.svg`,
    record: latest.id,
    method: latest.method,
    caption: `every published run of ${series}, each ratio with its 95% interval`,
    svg: await vegaSvg(spec),
  };
}

/** Every chart of a port: one per measured A/B record, and one per measured series with several runs. */
export async function portCharts(
  records: readonly BenchRecord[],
  series: readonly string[],
): Promise<SiteChart[]> {
  const charts: SiteChart[] = [];
  for (const record of records) if (isMeasuredAb(record)) charts.push(await abRecordChart(record));
  for (const id of series) {
    const chart = await seriesChart(records, id);
    if (chart !== undefined) charts.push(chart);
  }
  return charts;
}
