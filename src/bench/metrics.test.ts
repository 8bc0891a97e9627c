import { describe, expect, it } from "vitest";
import { computeMetrics, interTokenLatencies, requestLatency } from "./metrics.js";
import { metricRows } from "./report.js";
import type { RequestResult } from "./request.js";

function result(fields: Partial<RequestResult> & { index: number }): RequestResult {
  return {
    ok: true,
    scheduledAt: 0,
    sentAt: 0,
    endAt: 100,
    chunkTimes: [],
    chunkTokens: [],
    text: "",
    ...fields,
  };
}

describe("metrics", () => {
  it("counts a chunk of several tokens as several inter-token gaps", () => {
    const r = result({ index: 0, chunkTimes: [10, 20, 50], chunkTokens: [1, 1, 3] });
    expect(interTokenLatencies(r)).toEqual([10, 10, 10, 10]);
  });

  it("measures TTFT from the scheduled send time, and TPOT and decode rate after the first token", () => {
    const r = result({
      index: 0,
      scheduledAt: 5,
      sentAt: 15,
      endAt: 105,
      chunkTimes: [25, 65, 105],
      chunkTokens: [1, 1, 1],
      usageTokens: 5,
    });
    const latency = requestLatency(r);
    expect(latency.ttft).toBe(20);
    expect(latency.e2el).toBe(100);
    expect(latency.tpot).toBe(20);
    expect(latency.decodeTokS).toBe(50);
  });

  it("aggregates a run, goodput against SLOs, and the token cross-check", () => {
    const results = [
      result({
        index: 0,
        endAt: 1000,
        chunkTimes: [100, 1000],
        chunkTokens: [1, 1],
        usageTokens: 2,
        promptTokens: 10,
      }),
      result({
        index: 1,
        endAt: 2000,
        chunkTimes: [500, 2000],
        chunkTokens: [1, 1],
        usageTokens: 3,
        promptTokens: 10,
      }),
      result({ index: 2, ok: false, failure: { reason: "stall", message: "x" }, endAt: 500 }),
    ];
    const m = computeMetrics(results, {
      percentiles: [50],
      slos: { ttft: 200 },
      tokenizerCounts: new Map([
        [0, 2],
        [1, 2],
      ]),
    });
    expect(m.completed).toBe(2);
    expect(m.failures).toEqual({ stall: 1 });
    expect(m.durationS).toBe(2);
    expect(m.outputThroughput).toBe(2.5);
    expect(m.requestThroughput).toBe(1);
    expect(m.goodput).toBe(0.5);
    expect(m.prefillThroughput).toBeCloseTo(20 / 0.6, 9);
    expect(m.tokenCheck).toEqual({
      streamMismatches: 1,
      withoutUsage: 0,
      tokenizerMismatches: 1,
      tokenizerAbsDifference: 1,
    });
  });
});

describe("the rows a run prints", () => {
  it("say what each output-token check compares, out of how many requests", () => {
    const results = [
      result({ index: 0, chunkTimes: [10, 20], chunkTokens: [1, 1], usageTokens: 2, text: "ab" }),
      result({ index: 1, chunkTimes: [10, 20], chunkTokens: [1, 1], usageTokens: 3, text: "abc" }),
    ];
    const metrics = computeMetrics(results, {
      percentiles: [50],
      tokenizerCounts: new Map([
        [0, 2],
        [1, 2],
      ]),
    });
    const rows = metricRows(metrics, []);
    expect(rows).toContainEqual([
      "requests whose usage differs from the tokens streamed",
      "1 of 2",
      "requests",
    ]);
    expect(
      rows.find((row) => row[0] === "requests whose usage differs from /tokenize of their text")?.[1],
    ).toBe("1 of 2, 1 token apart in all (re-tokenizing decoded text can merge or split tokens)");
  });
});
