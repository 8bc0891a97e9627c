import { coefficientOfVariation, mean, median, quantile, sampleStandardDeviation } from "simple-statistics";
import { BringupError } from "../common/errors.js";
import { studentT975 } from "../records/index.js";

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
 * A seeded uniform source in [0, 1) (mulberry32): workloads, arrivals and simulations must
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

/** One block of an A/B: the trials of each arm in it (ABBA: two and two). */
export interface BlockTrials {
  readonly a: readonly number[];
  readonly b: readonly number[];
}

export interface RatioInterval extends Interval {
  /** Degrees of freedom of the residual variance the interval's t quantile is read at. */
  readonly df: number;
}

/**
 * The ratio b/a of an A/B run in blocks, with a 95% interval that keeps its coverage at the few
 * blocks an A/B has. Trials are compared within their block: on log values, a two-way model (a
 * level per block, plus the arm) takes out whatever moves a whole block, the ratio is the mean over
 * blocks of each block's log b minus log a, and its standard error comes from every trial's
 * residual, so the t quantile is read at n_trials - n_blocks - 1 degrees of freedom rather than at
 * n_blocks - 1 (ABBA's 3 blocks: 8, where a t over 3 block ratios has 2 and the bootstrap's
 * quantiles collapse onto the lowest and highest ratio). stats.test.ts simulates A/A runs and runs
 * with a known ratio, with heavy-tailed trial noise, block shifts and drift, to show it covers the
 * truth at least 93% of the time at 2 to 10 blocks. Every block must hold the same numbers of
 * trials per arm.
 */
export function blockedRatioInterval(blocks: readonly BlockTrials[]): RatioInterval {
  const [first] = blocks;
  const perArm = first === undefined ? undefined : { a: first.a.length, b: first.b.length };
  const values = blocks.flatMap((block) => [...block.a, ...block.b]);
  if (
    perArm === undefined ||
    perArm.a === 0 ||
    perArm.b === 0 ||
    blocks.some((block) => block.a.length !== perArm.a || block.b.length !== perArm.b) ||
    values.some((value) => !(value > 0) || !Number.isFinite(value))
  ) {
    throw new BringupError(
      "BENCH_RATIOS_INVALID",
      "a ratio interval needs blocks with the same number of trials of each arm, every trial a positive, finite figure; check that every trial measured something.",
    );
  }
  const n = blocks.length;
  const df = n * (perArm.a + perArm.b) - n - 1;
  const differences: number[] = [];
  let withinArms = 0;
  for (const block of blocks) {
    const logA = block.a.map(Math.log);
    const logB = block.b.map(Math.log);
    const meanA = mean(logA);
    const meanB = mean(logB);
    differences.push(meanB - meanA);
    for (const y of logA) withinArms += (y - meanA) ** 2;
    for (const y of logB) withinArms += (y - meanB) ** 2;
  }
  const difference = mean(differences);
  const estimate = Math.exp(difference);
  if (df < 1) return { estimate, low: estimate, high: estimate, df: 0 };
  // The part of each block's difference the common ratio does not explain is residual too.
  const harmonic = (perArm.a * perArm.b) / (perArm.a + perArm.b);
  let residual = withinArms;
  for (const d of differences) residual += harmonic * (d - difference) ** 2;
  const standardError = Math.sqrt(((residual / df) * (1 / perArm.a + 1 / perArm.b)) / n);
  const half = studentT975(df) * standardError;
  return { estimate, low: Math.exp(difference - half), high: Math.exp(difference + half), df };
}
