import { parse, View } from "vega";
import type { RunMetrics } from "./metrics.js";

/** A Vega spec's top level, loosely typed: the specs below are data, checked by Vega when parsed. */
export type VegaSpec = Record<string, unknown>;
type Spec = VegaSpec;

/** Renders a Vega spec to standalone SVG on the server (Vega's headless renderer: no browser, no canvas). */
export async function vegaSvg(spec: Spec): Promise<string> {
  const view = new View(
    parse({ $schema: "https://vega.github.io/schema/vega/v6.json", padding: 8, ...spec }),
    {
      renderer: "none",
    },
  );
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

const axisTitleFont = { titleFontWeight: "normal", titleFontSize: 11 };

/** The A/B chart: each block's ratio as a dot, the 95% interval as a band, the estimate and 1 as rules. */
export function abChartSvg(input: {
  ratios: readonly number[];
  estimate: number;
  low: number;
  high: number;
  title: string;
}): Promise<string> {
  const values = input.ratios.map((ratio, index) => ({ block: index + 1, ratio }));
  const all = [...input.ratios, input.low, input.high, 1];
  return vegaSvg({
    width: 420,
    height: 160,
    title: { text: input.title, fontSize: 12, fontWeight: "normal" },
    data: [{ name: "ratios", values }],
    scales: [
      {
        name: "x",
        type: "linear",
        domain: [Math.min(...all) * 0.95, Math.max(...all) * 1.05],
        range: "width",
        nice: true,
        zero: false,
      },
      { name: "y", type: "point", domain: { data: "ratios", field: "block" }, range: "height", padding: 0.5 },
    ],
    axes: [
      { orient: "bottom", scale: "x", title: "ratio (above 1: second arm better)", ...axisTitleFont },
      { orient: "left", scale: "y", title: "ABBA block", ...axisTitleFont },
    ],
    marks: [
      {
        type: "rect",
        encode: {
          enter: {
            x: { scale: "x", value: input.low },
            x2: { scale: "x", value: input.high },
            y: { value: 0 },
            y2: { signal: "height" },
            fill: { value: "#4c78a8" },
            fillOpacity: { value: 0.15 },
          },
        },
      },
      rule(input.estimate, "#4c78a8", []),
      rule(1, "#888", [4, 3]),
      {
        type: "symbol",
        from: { data: "ratios" },
        encode: {
          enter: {
            x: { scale: "x", field: "ratio" },
            y: { scale: "y", field: "block" },
            fill: { value: "#4c78a8" },
            size: { value: 40 },
          },
        },
      },
    ],
  });
}

function rule(at: number, color: string, dash: number[]): Spec {
  return {
    type: "rule",
    encode: {
      enter: {
        x: { scale: "x", value: at },
        y: { value: 0 },
        y2: { signal: "height" },
        stroke: { value: color },
        strokeDash: { value: dash },
      },
    },
  };
}

/** Latency percentiles of one run: mean, median and each chosen percentile of TTFT, TPOT, ITL and E2E. */
export function latencyChartSvg(metrics: RunMetrics, title: string): Promise<string> {
  const values = (["ttft", "tpot", "itl", "e2el"] as const).flatMap((metric) => {
    const s = metrics[metric];
    if (s.count === 0) return [];
    const stats: [string, number][] = [
      ["mean", s.mean],
      ["median", s.median],
      ...Object.entries(s.percentiles).map(([p, v]): [string, number] => [`p${p}`, v]),
    ];
    return stats.map(([stat, ms]) => ({ metric, stat, ms }));
  });
  return vegaSvg({
    width: 420,
    height: 180,
    title: { text: title, fontSize: 12, fontWeight: "normal" },
    data: [{ name: "latency", values }],
    scales: [
      { name: "x", type: "band", domain: { data: "latency", field: "metric" }, range: "width", padding: 0.2 },
      { name: "y", type: "linear", domain: { data: "latency", field: "ms" }, range: "height", nice: true },
      { name: "color", type: "ordinal", domain: { data: "latency", field: "stat" }, range: "category" },
    ],
    axes: [
      { orient: "bottom", scale: "x" },
      { orient: "left", scale: "y", title: "ms", ...axisTitleFont },
    ],
    legends: [{ fill: "color", title: "statistic", ...axisTitleFont }],
    marks: [
      {
        type: "group",
        from: { facet: { data: "latency", name: "per", groupby: "metric" } },
        encode: { enter: { x: { scale: "x", field: "metric" }, width: { scale: "x", band: 1 } } },
        signals: [{ name: "groupWidth", update: "bandwidth('x')" }],
        scales: [{ name: "inner", type: "band", domain: { data: "per", field: "stat" }, range: "width" }],
        marks: [
          {
            type: "rect",
            from: { data: "per" },
            encode: {
              enter: {
                x: { scale: "inner", field: "stat" },
                width: { scale: "inner", band: 1 },
                y: { scale: "y", field: "ms" },
                y2: { scale: "y", value: 0 },
                fill: { scale: "color", field: "stat" },
              },
            },
          },
        ],
      },
    ],
  });
}

/** A sweep: aggregate output tok/s and median TTFT at each load point. */
export function sweepChartSvg(
  points: readonly { load: string; metrics: RunMetrics }[],
  title: string,
): Promise<string> {
  const values = points.flatMap((p, order) => [
    { load: p.load, order, series: "output tok/s", value: p.metrics.outputThroughput },
    { load: p.load, order, series: "median TTFT (ms)", value: p.metrics.ttft.median },
  ]);
  return vegaSvg({
    width: 420,
    height: 180,
    title: { text: title, fontSize: 12, fontWeight: "normal" },
    data: [{ name: "sweep", values }],
    scales: [
      {
        name: "x",
        type: "point",
        domain: { data: "sweep", field: "load", sort: { field: "order", op: "min" } },
        range: "width",
        padding: 0.5,
      },
      { name: "y", type: "linear", domain: { data: "sweep", field: "value" }, range: "height", nice: true },
      { name: "color", type: "ordinal", domain: { data: "sweep", field: "series" }, range: "category" },
    ],
    axes: [
      { orient: "bottom", scale: "x", title: "load", ...axisTitleFont },
      { orient: "left", scale: "y" },
    ],
    legends: [{ stroke: "color", title: "figure", ...axisTitleFont }],
    marks: [
      {
        type: "group",
        from: { facet: { data: "sweep", name: "series", groupby: "series" } },
        marks: [
          {
            type: "line",
            from: { data: "series" },
            encode: {
              enter: {
                x: { scale: "x", field: "load" },
                y: { scale: "y", field: "value" },
                stroke: { scale: "color", field: "series" },
                strokeWidth: { value: 2 },
              },
            },
          },
          {
            type: "symbol",
            from: { data: "series" },
            encode: {
              enter: {
                x: { scale: "x", field: "load" },
                y: { scale: "y", field: "value" },
                fill: { scale: "color", field: "series" },
                size: { value: 30 },
              },
            },
          },
        ],
      },
    ],
  });
}
