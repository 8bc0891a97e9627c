import {
  coefficientOfVariation,
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
 * Percentile bootstrap 95% interval of the geometric mean of positive ratios, resampled in log
 * space (ratios multiply, so their logs add); seeded so one data set gives one interval.
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
  if (logs.length === 1) return { estimate, low: estimate, high: estimate };
  const random = seededRandom(options.seed ?? 1);
  const resamples = options.resamples ?? 10_000;
  const means = new Float64Array(resamples);
  for (let i = 0; i < resamples; i++) means[i] = mean(sampleWithReplacement(logs, logs.length, random));
  means.sort();
  return {
    estimate,
    low: Math.exp(quantileOfSorted(means, 0.025)),
    high: Math.exp(quantileOfSorted(means, 0.975)),
  };
}

function quantileOfSorted(sorted: Float64Array, p: number): number {
  const position = (sorted.length - 1) * p;
  const below = Math.floor(position);
  const above = Math.min(sorted.length - 1, below + 1);
  const lowValue = sorted[below] ?? Number.NaN;
  const highValue = sorted[above] ?? Number.NaN;
  return lowValue + (highValue - lowValue) * (position - below);
}
