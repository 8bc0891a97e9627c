import { describe, expect, it } from "vitest";
import { renderProven } from "./proven.js";
import { manifest, port } from "./tests/fixture.js";

const reference = (extra: Record<string, unknown>) => ({
  config: { model_type: "demo" },
  max_model_len: 4096,
  gates: [{ kind: "kv-capacity" as const, expected_ratio: 2, tolerance: 0.02 }],
  ...extra,
});

describe("Proven here", () => {
  it("says no at the vLLM level for a port vLLM does not serve, why, and shows its blocks level", () => {
    const blocks = {
      test: "tests/test_demo_blocks.py",
      not_served: "its recurrent state has no vLLM cache",
      blocks: ["the recurrence"],
      record: "a-port/device-blocks",
    };
    const lines = renderProven(
      port("/nowhere", manifest("a-port", { reference: reference({ device_blocks: blocks }) }), "x"),
      "x",
    );
    expect(lines[2]).toContain("**no** (not served by vLLM\\: its recurrent state has no vLLM cache)");
    expect(lines[3]).toContain("its blocks checked one by one against the reference engine\\: **not yet**");
  });

  it("says not yet at the vLLM level for a port without a check, and has no blocks level", () => {
    const lines = renderProven(port("/nowhere", manifest("a-port", { reference: reference({}) }), "x"), "x");
    expect(lines[2]).toContain("**not yet** (no record of the device\\-logprobs gate yet)");
    expect(lines.join("\n")).not.toContain("one by one");
  });
});
