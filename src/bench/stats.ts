import {
  coefficientOfVariation,
  errorFunction,
  mean,
  median,
  quantile,
  sampleStandardDeviation,
  sampleWithReplacement,
} from "simple-statistics";
import { BringupError } from "../common/errors.js";

/** Summary of one metric over the requests of a run. */
export interface Summary {
  readonly count: number;
  readonly mean: number;
  readonly median: number;
  readonly std: number;
  /** Chosen percentiles, keyed by the percentile as written ("99", "99.9"). */
  readonly percentiles: Record<string, number>;
}

/** Mean, median, sample standard deviation and chosen percentiles (simple-statistics' quantile). */
export function summarize(values: readonly number[], percentiles: readonly number[]): Summary {
  if (values.length === 0) {
    return { count: 0, mean: Number.NaN, median: Number.NaN, std: Number.NaN, percentiles: {} };
  }
  const list = [...values];
  const chosen: Record<string, number> = {};
  for (const p of percentiles) {
    if (!(p > 0 && p < 100) && p !== 100) {
      throw new BringupError(
        "BENCH_PERCENTILE",
        `percentile ${p} is outside (0, 100]; pass values like 50,90,99.`,
      );
    }
    chosen[String(p)] = quantile(list, p / 100);
  }
  return {
    count: list.length,
    mean: mean(list),
    median: median(list),
    std: list.length > 1 ? sampleStandardDeviation(list) : 0,
    percentiles: chosen,
  };
}

/** Coefficient of variation (sample standard deviation over the mean); 0 for fewer than two values. */
export function cv(values: readonly number[]): number {
  if (values.length < 2) return 0;
  return Math.abs(coefficientOfVariation([...values]));
}

/**
 * A seeded uniform source in [0, 1) (mulberry32): workloads, arrivals and bootstrap resamples must
 * repeat exactly for one seed, and neither Math.random nor simple-statistics offers a seed.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Interval {
  readonly estimate: number;
  readonly low: number;
  readonly high: number;
}

/**
 * Bootstrap 95% interval of the geometric mean of positive ratios, resampled in log space (ratios
 * multiply, so their logs add) and seeded so one data set gives one interval. With the few pairs an
 * A/B has, a plain percentile interval is too narrow; Hesterberg's expanded percentile interval
 * widens the quantiles it reads by sqrt(n/(n-1)) * t(n-1) in place of z.
 */
export function bootstrapRatio(
  ratios: readonly number[],
  options: { resamples?: number; seed?: number } = {},
): Interval {
  if (ratios.length === 0 || ratios.some((r) => !(r > 0) || !Number.isFinite(r))) {
    throw new BringupError(
      "BENCH_RATIOS_INVALID",
      "a ratio interval needs at least one positive, finite ratio; check that every trial measured something.",
    );
  }
  const logs = ratios.map(Math.log);
  const estimate = Math.exp(mean(logs));
  const n = logs.length;
  if (n === 1) return { estimate, low: estimate, high: estimate };
  const random = seededRandom(options.seed ?? 1);
  const resamples = options.resamples ?? 10_000;
  const means = new Float64Array(resamples);
  for (let i = 0; i < resamples; i++) means[i] = mean(sampleWithReplacement(logs, n, random));
  means.sort();
  const tail = normalCdf(-Math.sqrt(n / (n - 1)) * studentT975(n - 1));
  return {
    estimate,
    low: Math.exp(quantileOfSorted(means, tail)),
    high: Math.exp(quantileOfSorted(means, 1 - tail)),
  };
}

/** The standard normal's 97.5% quantile (simple-statistics' probit is an approximation good to 3 places). */
const Z975 = 1.959963984540054;

function normalCdf(x: number): number {
  return 0.5 * (1 + errorFunction(x / Math.SQRT2));
}

/**
 * The 97.5% quantile of Student's t with `df` degrees of freedom: exact for 1 and 2, Hill's
 * Cornish-Fisher expansion above (within 0.03 at 3, closer beyond); no maintained package has it.
 */
export function studentT975(df: number): number {
  if (df === 1) return 12.706204736174705;
  if (df === 2) return 4.302652729749464;
  const z = Z975;
  const g1 = (z ** 3 + z) / 4;
  const g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96;
  const g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384;
  const g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160;
  return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4;
}

function quantileOfSorted(sorted: Float64Array, p: number): number {
  const position = (sorted.length - 1) * p;
  const below = Math.floor(position);
  const above = Math.min(sorted.length - 1, below + 1);
  const lowValue = sorted[below] ?? Number.NaN;
  const highValue = sorted[above] ?? Number.NaN;
  return lowValue + (highValue - lowValue) * (position - below);
}
