import { describe, expect, it } from "vitest";
import { BenchRecord } from "./record.js";
import { runTarget } from "./run-target.js";

function measured(software: Record<string, string> | undefined, hardware?: string): BenchRecord {
  const fingerprint = { host: "h", ...(software ? { software } : {}), ...(hardware ? { hardware } : {}) };
  return BenchRecord.parse({
    schema: "bringup.record/1",
    id: "demo/x",
    port: "demo",
    metric: "decode_tok_s",
    label: "decode",
    unit: "tok/s",
    method: "single-run",
    source: { kind: "measured", tool: "bringup up" },
    arms: [{ name: "a", samples: [1], fingerprint }],
    recorded_at: "2026-01-01T00:00:00Z",
  });
}

describe("runTarget", () => {
  it("tells runs on bringup's CPU engine from runs against another server and reported figures", () => {
    expect(runTarget(measured({ bringup: "0.1.0", model: "tiny" }))).toBe("cpu-engine");
    expect(runTarget(measured({ model: "tiny", node: "20" }))).toBe("cpu-engine");
    expect(runTarget(measured(undefined))).toBe("cpu-engine");
    expect(runTarget(measured({ vllm: "0.11", model: "tiny" }))).toBe("endpoint");
    expect(runTarget(measured({ bringup: "0.1.0" }, "Gaudi 2"))).toBe("endpoint");
    const reported = BenchRecord.parse({
      ...measured(undefined),
      source: { kind: "reported", where: "https://example.org", stated_method: "vendor run" },
    });
    expect(runTarget(reported)).toBe("reported");
  });
});
