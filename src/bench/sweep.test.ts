import { describe, expect, it } from "vitest";
import { BenchRecord } from "../records/index.js";
import { startServer } from "../server/index.js";
import { runSweep, type SweepArm, sweepId, sweepRecordId, sweepRecords } from "./sweep.js";
import { randomWorkload } from "./workload.js";

describe("the throughput-latency sweep", () => {
  it("measures both arms at each concurrency in alternating order and records every point", async () => {
    const a = await startServer({ tinySize: "tiny", port: 0, threads: 1, kvLayout: "full" });
    const b = await startServer({ tinySize: "tiny", port: 0, threads: 1, kvLayout: "window-sized" });
    try {
      const arm = (name: string, server: typeof a): SweepArm => ({
        name,
        target: { url: server.url, model: server.modelName, ignoreEos: true },
        fingerprint: { host: "test", software: { bringup: "0.1.0" } },
      });
      const arms = [arm("full KV layout", a), arm("window-sized KV layout", b)] as const;
      const points = await runSweep({
        arms,
        concurrencies: [1, 2, 3],
        requestsPerStream: 1,
        workload: (requests) => randomWorkload({ numPrompts: requests, inputLen: 8, outputLen: 4, seed: 1 }),
      });
      expect(points.map((p) => `${p.concurrency}:${p.arm.split(" ")[0]}`)).toEqual([
        "1:full",
        "1:window-sized",
        "2:window-sized",
        "2:full",
        "3:full",
        "3:window-sized",
      ]);
      for (const point of points) {
        expect(point.result.requests).toHaveLength(point.concurrency);
        expect(point.result.metrics.outputThroughput).toBeGreaterThan(0);
      }
      const id = sweepId("demo", new Date("2026-12-04T06:00:01Z"));
      expect(id).toBe("demo/sweep-20261204-060001");
      const records = sweepRecords(points, { port: "demo", id, arms, workloadName: "random-8-4" }).map((r) =>
        BenchRecord.parse(r),
      );
      const throughput = records.filter((r) => r.metric === "output_throughput");
      expect(throughput).toHaveLength(6);
      expect(sweepRecordId(throughput[2]?.id as string)).toEqual({
        sweep: id,
        arm: "window-sized-kv-layout",
        concurrency: 2,
        metric: "output-throughput",
      });
      expect(records.some((r) => r.metric === "ttft_ms" && r.arms[0]?.samples.length === 3)).toBe(true);
      expect(sweepRecordId("demo/reference-decode-ab.2")).toBeUndefined();
    } finally {
      await a.close();
      await b.close();
    }
  });
});
