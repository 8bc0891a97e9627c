import type { BenchRecordInput, Fingerprint, Unit } from "../records/index.js";
import { requestLatency } from "./metrics.js";
import { measuredRecord } from "./record-builders.js";
import type { RunResult } from "./run.js";

/**
 * The single-run records of one measured load point: aggregate output tok/s, and per-request TTFT,
 * TPOT and end-to-end latency with every request's sample.
 */
export function runRecords(
  run: RunResult,
  options: { port: string; id: string; context: string; fingerprint: Fingerprint; command?: string },
): BenchRecordInput[] {
  const latencies = run.requests.filter((r) => r.ok).map(requestLatency);
  const figures: { metric: string; label: string; unit: Unit; samples: number[] }[] = [
    {
      metric: "output_throughput",
      label: "aggregate output tokens per second",
      unit: "tok/s",
      samples: [run.metrics.outputThroughput],
    },
    { metric: "ttft_ms", label: "time to first token", unit: "ms", samples: latencies.map((l) => l.ttft) },
    {
      metric: "tpot_ms",
      label: "time per output token",
      unit: "ms",
      samples: latencies.flatMap((l) => (l.tpot === undefined ? [] : [l.tpot])),
    },
    { metric: "e2el_ms", label: "end-to-end latency", unit: "ms", samples: latencies.map((l) => l.e2el) },
  ];
  const failed = run.metrics.failed > 0 ? `; ${run.metrics.failed} failed requests left out` : "";
  return figures
    .filter((f) => f.samples.length > 0)
    .map((f) =>
      measuredRecord({
        port: options.port,
        id: `${options.id}-${f.metric.replace(/_/g, "-")}`,
        metric: f.metric,
        label: f.label,
        unit: f.unit,
        method: "single-run",
        context: `${options.context}${failed}`,
        ...(options.command ? { command: options.command } : {}),
        arms: [
          {
            name: "run",
            samples: f.samples.map((v) => Number(v.toFixed(3))),
            fingerprint: options.fingerprint,
          },
        ],
      }),
    );
}
