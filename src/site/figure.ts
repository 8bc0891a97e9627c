import { type BenchRecord, type Figure, type Method, type Unit, verdictWords } from "../records/index.js";
import { portLink, portPage } from "./paths.js";

/** Units written against the number ("1.35x", "0.4%"); every other unit follows after a space. */
const ATTACHED_UNITS: ReadonlySet<Unit> = new Set(["x", "%"]);

/** Short method names as the pages print them after a figure. */
export const METHOD_LABELS: Record<Method, string> = {
  "same-pod-ab": "same-pod A/B",
  "same-node-ab": "same-node A/B",
  "chained-ab": "chained A/Bs",
  "different-conditions": "different conditions",
  "single-run": "single run",
  reported: "reported",
};

/** Context phrases that read on from the figure without a comma ("22 tok/s at one stream"). */
const PREPOSITION =
  /^(?:at|across|after|before|between|by|during|for|from|in|on|over|per|to|under|up|with|within)\b/i;

/** A number as the record states it, with the decimal places its source gave (computed medians are cut to four significant digits first). */
export function formatNumber(value: number, decimals?: number): string {
  return decimals === undefined ? String(value) : value.toFixed(decimals);
}

/** Token counts in the binary K and M that context lengths use: "256K", "1M", else digits. */
export function formatTokens(tokens: number): string {
  const k = 1024;
  if (tokens >= k * k && tokens % (k * k) === 0) return `${tokens / (k * k)}M`;
  if (tokens >= k && tokens % k === 0) return `${tokens / k}K`;
  return String(tokens);
}

/** Token counts read as the page writes them ("32K"); other units keep the stated digits. */
function formatIn(value: number, unit: Unit, decimals?: number): string {
  return unit === "tokens" ? formatTokens(value) : formatNumber(value, decimals);
}

function computed(value: number): number {
  return Number(value.toPrecision(4));
}

/** Units the figure's label already names: the number stands alone. */
const UNWRITTEN_UNITS: ReadonlySet<Unit> = new Set(["count", "perplexity"]);

function withUnit(text: string, unit: Unit): string {
  if (UNWRITTEN_UNITS.has(unit)) return text;
  return ATTACHED_UNITS.has(unit) ? `${text}${unit}` : `${text} ${unit}`;
}

/** One figure in its unit: "22 to 24 tok/s", "1.35x to 1.55x", "3/3 needles", "within 0.4%". */
export function formatFigure(figure: Figure, unit: Unit): string {
  switch (figure.shape) {
    case "point":
      return withUnit(formatIn(figure.value, unit, figure.decimals), unit);
    case "range": {
      const low = formatIn(figure.low, unit, figure.decimals);
      const high = formatIn(figure.high, unit, figure.decimals);
      return ATTACHED_UNITS.has(unit)
        ? `${withUnit(low, unit)} to ${withUnit(high, unit)}`
        : withUnit(`${low} to ${high}`, unit);
    }
    case "at-most":
      return `${unit === "%" ? "within" : "at most"} ${withUnit(formatIn(figure.value, unit, figure.decimals), unit)}`;
    case "at-least":
      return `at least ${withUnit(formatIn(figure.value, unit, figure.decimals), unit)}`;
    case "fraction":
      return withUnit(`${figure.passed}/${figure.total}`, unit);
  }
}

export function median(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] ?? Number.NaN;
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] ?? Number.NaN) + upper) / 2;
}

type Arm = BenchRecord["arms"][number];

/** An arm's figure: the stated one, else the median of its samples. */
export function armFigure(arm: Arm): { figure: Figure; fromSamples: boolean } {
  if (arm.figure !== undefined) return { figure: arm.figure, fromSamples: false };
  return { figure: { shape: "point", value: computed(median(arm.samples)) }, fromSamples: true };
}

/** "44.5 vs 17.9 tok/s": one unit after plain points, else each arm's figure in full; "medians …" when computed from samples. */
export function formatArms(record: BenchRecord): string {
  const figures = record.arms.map(armFigure);
  const points = figures.map(({ figure }) => (figure.shape === "point" ? figure : undefined));
  const text =
    !ATTACHED_UNITS.has(record.unit) && points.every((point) => point !== undefined)
      ? withUnit(
          points.map((point) => formatIn(point.value, record.unit, point.decimals)).join(" vs "),
          record.unit,
        )
      : figures.map(({ figure }) => formatFigure(figure, record.unit)).join(" vs ");
  if (!figures.some(({ fromSamples }) => fromSamples)) return text;
  return `${figures.length === 1 ? "median" : "medians"} ${text}`;
}

/**
 * The stated or measured ratio: "ratio 2.49x, 95% CI 2.3x to 2.6x"; when the interval holds 1 it
 * leads with "no difference was shown", since the run did not show either arm better, and with
 * "noisy" when the interval is too wide to headline (records' abVerdict states the rule).
 */
export function formatComparison(comparison: NonNullable<BenchRecord["comparison"]>): string {
  const ratio = `ratio ${formatFigure(comparison.figure, "x")}`;
  const parts = [ratio];
  if (comparison.ci95 !== undefined) {
    const [low, high] = comparison.ci95;
    parts[0] = `${verdictWords(comparison.ci95)}${ratio}`;
    parts.push(`95% CI ${formatFigure({ shape: "range", low, high }, "x")}`);
  }
  if (comparison.cv !== undefined) parts.push(`CV ${formatNumber(comparison.cv)}`);
  return parts.join(", ");
}

/** The named differences of a different-conditions record: "nodes: 1 vs 2; format: MXFP4 vs FP8". */
export function formatConditions(record: BenchRecord): string {
  return (record.conditions ?? []).map((c) => `${c.name}: ${c.a} vs ${c.b}`).join("; ");
}

/** The method's short name, with ", reported" for a figure taken from elsewhere: "same-pod A/B, reported". */
export function methodName(record: BenchRecord): string {
  const label = METHOD_LABELS[record.method];
  return record.source.kind === "reported" && record.method !== "reported" ? `${label}, reported` : label;
}

/** The method as printed after a figure, conditions named: "different conditions (nodes: 1 vs 2), reported". */
export function formatMethod(record: BenchRecord): string {
  const conditions = formatConditions(record);
  if (record.method !== "different-conditions" || conditions === "") return methodName(record);
  const named = `${METHOD_LABELS[record.method]} (${conditions})`;
  return record.source.kind === "reported" ? `${named}, reported` : named;
}

/** The figure without its method: arms, ratio and what it applies to. A ratio record shows only its ratio, not its baseline "1x". */
export function formatValue(record: BenchRecord): string {
  const ratioOnly = record.unit === "x" && record.comparison !== undefined;
  let text = ratioOnly ? "" : formatArms(record);
  if (record.comparison !== undefined) {
    const comparison = formatComparison(record.comparison);
    text = ratioOnly ? comparison : `${text} (${comparison})`;
  }
  if (record.context !== undefined) {
    text = PREPOSITION.test(record.context) ? `${text} ${record.context}` : `${text}, ${record.context}`;
  }
  return text;
}

/** The id of a record's row on its port's page, the target of every link to the record. */
export function recordAnchor(id: string): string {
  return `record-${id.replace("/", "--")}`;
}

/** Where a record's row is, as a link from `fromPage` (a generated page path such as `ports/x.md`). */
export function recordHref(record: BenchRecord, fromPage: string): string {
  const page = fromPage === portPage(record.port) ? "" : portLink(fromPage, record.port);
  return `${page}#${recordAnchor(record.id)}`;
}

/**
 * A figure on a page: `display` (Markdown, escaped) as a link to its record's row, carrying the
 * record id and method as data-record and data-method attributes, so every figure in the page says
 * where it comes from (the browser test checks that each one does).
 */
export function figureLink(display: string, record: BenchRecord, fromPage: string): string {
  return `[${display}](${recordHref(record, fromPage)}){data-record="${record.id}" data-method="${record.method}"}`;
}

/** A figure as every page prints it: "44.5 vs 17.9 tok/s at one stream — same-pod A/B, reported". */
export function formatRecordFigure(record: BenchRecord): string {
  return `${formatValue(record)} — ${formatMethod(record)}`;
}
