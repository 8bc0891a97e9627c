import { describe, expect, it } from "vitest";
import { recordNumbers } from "./numbers.js";
import { BenchRecord, RECORD_SCHEMA_VERSION } from "./record.js";

describe("recordNumbers", () => {
  it("collects samples, arm figures and the comparison's figure, interval and spread", () => {
    const record = BenchRecord.parse({
      schema: RECORD_SCHEMA_VERSION,
      id: "p/decode",
      port: "p",
      metric: "decode_tok_s",
      label: "decode at one stream",
      unit: "tok/s",
      method: "same-pod-ab",
      source: { kind: "measured", tool: "bringup bench" },
      arms: [
        { name: "stock", samples: [17.8, 18.0] },
        { name: "kernels", figure: { shape: "range", low: 44.1, high: 44.9 } },
      ],
      comparison: { figure: { shape: "point", value: 2.49 }, ci95: [2.4, 2.6], cv: 0.01, better: "higher" },
      recorded_at: "2026-01-01T00:00:00Z",
    });
    expect(recordNumbers(record)).toEqual([17.8, 18.0, 44.1, 44.9, 2.49, 2.4, 2.6, 0.01]);
  });
});
