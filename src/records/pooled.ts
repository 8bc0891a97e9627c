import { studentT975, Z975 } from "./student-t.js";

/** One run of a series: its ratio and 95% interval. */
export interface RunRatio {
  readonly ratio: number;
  readonly ci95: readonly [number, number];
}

/** The ratio pooled over the runs of a series, with its own 95% interval. */
export interface PooledRatio {
  readonly estimate: number;
  readonly low: number;
  readonly high: number;
  readonly runs: number;
  /** Between-run variance of the log ratio beyond what each run's interval explains (tau squared). */
  readonly betweenRuns: number;
}

/**
 * The ratio pooled across runs, as a meta-analysis pools studies: each run's log ratio weighted by
 * the inverse of its variance (read from its 95% interval as if normal) plus the between-run
 * variance (DerSimonian-Laird), so runs that disagree more than their intervals allow widen the
 * pooled interval. The interval is Hartung-Knapp's, with Student's t on runs - 1 degrees of freedom,
 * never narrower than the plain random-effects one: with few runs the normal interval is too narrow.
 * Undefined for fewer than two runs or a run whose ratio or interval is not positive.
 */
export function pooledRatio(runs: readonly RunRatio[]): PooledRatio | undefined {
  if (runs.length < 2) return undefined;
  if (!runs.every((run) => run.ratio > 0 && run.ci95[0] > 0 && run.ci95[1] > run.ci95[0])) {
    return undefined;
  }
  const y = runs.map((run) => Math.log(run.ratio));
  const variance = runs.map((run) => ((Math.log(run.ci95[1]) - Math.log(run.ci95[0])) / (2 * Z975)) ** 2);
  const weighted = (weights: readonly number[]) => {
    const total = weights.reduce((sum, w) => sum + w, 0);
    const mean = weights.reduce((sum, w, i) => sum + w * (y[i] as number), 0) / total;
    const q = weights.reduce((sum, w, i) => sum + w * ((y[i] as number) - mean) ** 2, 0);
    return { total, mean, q };
  };
  const fixed = variance.map((v) => 1 / v);
  const fe = weighted(fixed);
  const k = runs.length;
  const c = fe.total - fixed.reduce((sum, w) => sum + w * w, 0) / fe.total;
  const betweenRuns = Math.max(0, (fe.q - (k - 1)) / c);
  const re = weighted(variance.map((v) => 1 / (v + betweenRuns)));
  const hartungKnapp = re.q / ((k - 1) * re.total);
  const half = studentT975(k - 1) * Math.sqrt(Math.max(hartungKnapp, 1 / re.total));
  return {
    estimate: Math.exp(re.mean),
    low: Math.exp(re.mean - half),
    high: Math.exp(re.mean + half),
    runs: k,
    betweenRuns,
  };
}
