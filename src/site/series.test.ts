import { describe, expect, it } from "vitest";
import { BenchRecord } from "../records/index.js";
import { formatRecordFigure } from "./figure.js";
import { citedFigure, pooledSeries, seriesOf } from "./series.js";

function ab(id: string, ratio: number, ci95: [number, number]): BenchRecord {
  return BenchRecord.parse({
    schema: "bringup.record/1",
    id,
    port: "demo-v1.5",
    metric: "decode_tok_s",
    label: "decode",
    unit: "tok/s",
    method: "same-pod-ab",
    source: { kind: "measured", tool: "bringup up" },
    arms: [
      { name: "a", samples: [10, 11, 12, 13] },
      { name: "b", samples: [14, 15, 16, 17] },
    ],
    comparison: { figure: { shape: "point", value: ratio }, ci95, better: "higher" },
    recorded_at: "2026-01-01T00:00:00Z",
  });
}

describe("a series of runs on a page", () => {
  it("finds a run's series from its id, leaving dots in the port's name alone", () => {
    expect(seriesOf("demo-v1.5/decode-ab.12")).toBe("demo-v1.5/decode-ab");
    expect(seriesOf("demo-v1.5/decode-ab")).toBe("demo-v1.5/decode-ab");
  });

  it("cites a run of a series by the ratio pooled over every run, then the run itself", () => {
    const runs = [
      ab("demo-v1.5/decode-ab", 1.36, [0.905, 2.05]),
      ab("demo-v1.5/decode-ab.2", 1.5, [1.02, 2.21]),
      ab("demo-v1.5/decode-ab.3", 1.755, [1.217, 2.531]),
      ab("demo-v1.5/other", 2, [1.9, 2.1]),
    ];
    const lucky = runs[2] as BenchRecord;
    expect(pooledSeries(runs, lucky)?.pooled.runs).toBe(3);
    const cited = citedFigure(runs, lucky, formatRecordFigure);
    expect(cited).toMatch(
      /^pooled over 3 runs: no difference was shown: ratio 1\.54x, 95% CI 0\.947x to 2\.52x; this run \(demo-v1\.5\/decode-ab\.3\): .*ratio 1\.755x/,
    );
    // A record alone in its series is cited as it is.
    const alone = runs[3] as BenchRecord;
    expect(citedFigure(runs, alone, formatRecordFigure)).toBe(formatRecordFigure(alone));
  });
});
