import { BringupError } from "../common/errors.js";
import type { Unit } from "../records/index.js";
import type { RunMetrics } from "./metrics.js";

/** The figure one trial contributes to an A/B, with its unit and which way is better. */
export interface TrialMetricSpec {
  readonly unit: Unit;
  readonly better: "higher" | "lower";
  readonly label: string;
  readonly of: (metrics: RunMetrics) => number;
}

export const TRIAL_METRICS = {
  output_throughput: {
    unit: "tok/s",
    better: "higher",
    label: "aggregate output tokens per second",
    of: (m) => m.outputThroughput,
  },
  request_throughput: {
    unit: "req/s",
    better: "higher",
    label: "completed requests per second",
    of: (m) => m.requestThroughput,
  },
  decode_tok_s: {
    unit: "tok/s",
    better: "higher",
    label: "median decode tokens per second of one stream",
    of: (m) => m.decode.median,
  },
  mean_ttft_ms: { unit: "ms", better: "lower", label: "mean time to first token", of: (m) => m.ttft.mean },
  mean_tpot_ms: { unit: "ms", better: "lower", label: "mean time per output token", of: (m) => m.tpot.mean },
  mean_itl_ms: { unit: "ms", better: "lower", label: "mean inter-token latency", of: (m) => m.itl.mean },
  mean_e2el_ms: { unit: "ms", better: "lower", label: "mean end-to-end latency", of: (m) => m.e2el.mean },
} as const satisfies Record<string, TrialMetricSpec>;

export type TrialMetric = keyof typeof TRIAL_METRICS;

export function trialMetric(name: string): TrialMetricSpec & { name: TrialMetric } {
  if (!(name in TRIAL_METRICS)) {
    throw new BringupError(
      "BENCH_METRIC_UNKNOWN",
      `no A/B metric "${name}"; pick one of ${Object.keys(TRIAL_METRICS).join(", ")}.`,
      { subject: name },
    );
  }
  return { ...TRIAL_METRICS[name as TrialMetric], name: name as TrialMetric };
}
