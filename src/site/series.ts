import { inReferenceSeries } from "../catalog/index.js";
import { type BenchRecord, type PooledRatio, pooledRatio, verdictWords } from "../records/index.js";
import { formatFigure } from "./figure.js";

/** A measured comparison: two arms with samples and a ratio with its interval. */
export function isMeasuredAb(record: BenchRecord): boolean {
  return (
    record.source.kind === "measured" &&
    record.arms.length === 2 &&
    record.arms.every((arm) => arm.samples.length > 0) &&
    record.comparison?.figure.shape === "point" &&
    record.comparison.ci95 !== undefined
  );
}

/** A trial of an A/B (`<a/b id>-t<nnn>-<arm>`): charted with its A/B, listed apart from the figures. */
export function isTrial(record: BenchRecord): boolean {
  return /-t[0-9]{3}-[ab]$/.test(record.id);
}

/** The series a record id belongs to: the id without its run number (`<series>.<n>`). */
export function seriesOf(id: string): string {
  const slash = id.indexOf("/");
  return id.slice(0, slash + 1) + id.slice(slash + 1).replace(/\.[0-9]+$/, "");
}

/** The measured A/B runs of a series, in the order the records list them. */
export function seriesRuns(records: readonly BenchRecord[], series: string): BenchRecord[] {
  return records.filter((record) => inReferenceSeries(record.id, series) && isMeasuredAb(record));
}

/** A measured A/B's ratio and interval (only called on records isMeasuredAb accepts). */
export function abRatio(record: BenchRecord): { ratio: number; ci95: [number, number] } {
  const comparison = record.comparison as NonNullable<BenchRecord["comparison"]>;
  const ratio = comparison.figure.shape === "point" ? comparison.figure.value : Number.NaN;
  return { ratio, ci95: comparison.ci95 as [number, number] };
}

/** The pooled ratio of the series `record` belongs to, when it is a measured A/B series of two runs or more. */
export function pooledSeries(
  records: readonly BenchRecord[],
  record: BenchRecord,
): { series: string; pooled: PooledRatio } | undefined {
  if (!isMeasuredAb(record)) return undefined;
  const series = seriesOf(record.id);
  const pooled = pooledRatio(seriesRuns(records, series).map(abRatio));
  return pooled === undefined ? undefined : { series, pooled };
}

/** "pooled over 5 runs: ratio 1.44x, 95% CI 1.12x to 1.84x", with the A/B headline rule's words. */
export function formatPooled(pooled: PooledRatio): string {
  const interval: [number, number] = [pooled.low, pooled.high];
  const round = (value: number) => Number(value.toPrecision(3));
  const ratio = formatFigure({ shape: "point", value: round(pooled.estimate) }, "x");
  const ci = formatFigure({ shape: "range", low: round(pooled.low), high: round(pooled.high) }, "x");
  return `pooled over ${pooled.runs} runs: ${verdictWords(interval)}ratio ${ratio}, 95% CI ${ci}`;
}

/**
 * A figure as a page cites it: a run of a measured A/B series leads with the series' pooled ratio
 * and interval, then this run's figure, so a page never rests on one lucky run; any other record
 * is its figure as `figure` gives it.
 */
export function citedFigure(
  records: readonly BenchRecord[],
  record: BenchRecord,
  figure: (record: BenchRecord) => string,
): string {
  const series = pooledSeries(records, record);
  if (series === undefined) return figure(record);
  return `${formatPooled(series.pooled)}; this run (${record.id}): ${figure(record)}`;
}
