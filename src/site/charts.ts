import { type VegaSpec, vegaSvg } from "../bench/index.js";
import { latestInSeries } from "../catalog/index.js";
import { type BenchRecord, pooledRatio, runTarget } from "../records/index.js";
import { abRatio, isMeasuredAb, seriesRuns } from "./series.js";

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

export const COLORS = ["#4c78a8", "#f58518"];
export const axisTitle = { titleFontWeight: "normal" };

/**
 * Sizes for charts that a phone shrinks: a chart is drawn at most about 460 px wide (plot, axis
 * labels and padding) and shown at the column's width, about 340 px at 390 px, so 14 px text
 * reads at 10 px there or more.
 */
export const CHART_WIDTH = 300;
export const READABLE = {
  axis: { labelFontSize: 14, titleFontSize: 14 },
  legend: { labelFontSize: 14, titleFontSize: 14 },
  title: { fontSize: 14 },
};

/** A record or series id as title lines that fit the plot's width: the port, then the slug. */
function titleLines(id: string): string[] {
  const slash = id.indexOf("/");
  return [id.slice(0, slash + 1), id.slice(slash + 1)];
}

/**
 * The marks of ratios with their intervals on a log x scale: a dashed rule at 1 (no difference),
 * each interval (fields low, high) as a line and each ratio (field ratio) as a symbol, drawn in
 * `color` and `shape` (values or encodings of the data's fields).
 */
function intervalMarks(options: {
  data: string;
  x: string;
  y: Record<string, unknown>;
  height: Record<string, unknown>;
  color: Record<string, unknown>;
  shape?: Record<string, unknown>;
}): VegaSpec[] {
  const { data, x, y, height, color, shape } = options;
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
          stroke: color,
          strokeWidth: { value: 2 },
        },
      },
    },
    {
      type: "symbol",
      from: { data },
      encode: {
        enter: {
          x: { scale: x, field: "ratio" },
          y,
          fill: color,
          size: { value: 70 },
          ...(shape ? { shape } : {}),
        },
      },
    },
  ];
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
    width: CHART_WIDTH,
    height: 265,
    config: READABLE,
    title: { text: titleLines(record.id), fontWeight: "normal", limit: CHART_WIDTH },
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
        encode: { enter: { y: { value: 215 }, width: { signal: "width" }, height: { value: 30 } } },
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
            title: "ratio, 95% interval (dashed: 1)",
            ...axisTitle,
          },
        ],
        marks: intervalMarks({
          data: "ratio",
          x: "r",
          y: { value: 15 },
          height: { value: 30 },
          color: { value: "#333" },
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

/** Where each run ran, as the forest plot draws and names it: a circle for bringup's CPU engine, a square for an endpoint. */
const WHERE = {
  "cpu-engine": { shape: "circle", label: "bringup's CPU engine", color: COLORS[0] },
  endpoint: { shape: "square", label: "vLLM or device endpoint", color: COLORS[1] },
  pooled: { shape: "diamond", label: "pooled across the runs", color: "#333" },
} as const;
const WHERE_KEYS = ["cpu-engine", "endpoint", "pooled"] as const;

/**
 * Every run of a measured series as a forest plot: each run's ratio with its 95% interval, marked
 * by where it ran (bringup's CPU engine or a served endpoint) and "unpublished" when it is a local
 * record, and below them the ratio pooled across the runs with its own interval.
 */
export async function seriesChart(
  records: readonly BenchRecord[],
  series: string,
  local: ReadonlySet<string> = new Set(),
): Promise<SiteChart | undefined> {
  const runs = seriesRuns(records, series);
  const latest = latestInSeries(runs, series);
  const pooled = pooledRatio(runs.map(abRatio));
  if (pooled === undefined || latest === undefined) return undefined;
  const values: { run: string; ratio: number; low: number; high: number; where: string; shape: string }[] =
    runs.map((record) => {
      const { ratio, ci95 } = abRatio(record);
      const name = record.id.slice(series.length + 1) || "1";
      const where = runTarget(record) === "cpu-engine" ? "cpu-engine" : "endpoint";
      return {
        run: local.has(record.id) ? `${name}, local` : name,
        ratio,
        low: ci95[0],
        high: ci95[1],
        where: WHERE[where].label,
        shape: WHERE[where].shape,
      };
    });
  values.push({
    run: "pooled",
    ratio: pooled.estimate,
    low: pooled.low,
    high: pooled.high,
    where: WHERE.pooled.label,
    shape: WHERE.pooled.shape,
  });
  const span = values.flatMap((v) => [v.low, v.high, 1]);
  const spec: VegaSpec = {
    width: CHART_WIDTH,
    height: 26 * values.length + 20,
    config: READABLE,
    title: { text: ["every run of", ...titleLines(series)], fontWeight: "normal", limit: CHART_WIDTH },
    data: [{ name: "runs", values }],
    scales: [
      { name: "x", type: "log", domain: [Math.min(...span) / 1.1, Math.max(...span) * 1.1], range: "width" },
      { name: "y", type: "band", domain: { data: "runs", field: "run" }, range: "height", padding: 0.3 },
      {
        name: "where",
        type: "ordinal",
        domain: WHERE_KEYS.map((key) => WHERE[key].label),
        range: WHERE_KEYS.map((key) => WHERE[key].color),
      },
      {
        name: "shape",
        type: "ordinal",
        domain: WHERE_KEYS.map((key) => WHERE[key].label),
        range: WHERE_KEYS.map((key) => WHERE[key].shape),
      },
    ],
    axes: [
      { orient: "bottom", scale: "x", title: "ratio, 95% interval (dashed: 1)", ...axisTitle },
      { orient: "left", scale: "y", title: "run", ...axisTitle },
    ],
    legends: [
      {
        fill: "where",
        shape: "shape",
        orient: "bottom",
        direction: "vertical",
        labelLimit: CHART_WIDTH,
        title: "where it ran",
        ...axisTitle,
      },
    ],
    marks: intervalMarks({
      data: "runs",
      x: "x",
      y: { scale: "y", field: "run", band: 0.5 },
      height: { signal: "height" },
      color: { scale: "where", field: "where" },
      shape: { field: "shape" },
    }),
  };
  return {
    file: `${series}.runs.svg`,
    record: latest.id,
    method: latest.method,
    caption: `every run of ${series}, each ratio with its 95% interval, marked by where it ran (local: not published), and the ratio pooled across them`,
    svg: await vegaSvg(spec),
  };
}

/** Every chart of a port: one per measured A/B record, and one per measured series with several runs. */
export async function portCharts(
  records: readonly BenchRecord[],
  series: readonly string[],
  local: ReadonlySet<string> = new Set(),
): Promise<SiteChart[]> {
  const charts: SiteChart[] = [];
  for (const record of records) if (isMeasuredAb(record)) charts.push(await abRecordChart(record));
  for (const id of series) {
    const chart = await seriesChart(records, id, local);
    if (chart !== undefined) charts.push(chart);
  }
  return charts;
}
