import { describe, expect, it } from "vitest";
import type { PortManifestInput } from "../catalog/index.js";
import { renderDeviceCheck } from "./device-check.js";
import { manifest, port, record } from "./tests/fixture.js";

const deviceCheck = {
  kind: "device-logprobs" as const,
  device: "the bringup_vllm plugin on vLLM (CPU)",
  max_logprob_diff: 1e-4,
  top_k: 5,
  served: ["vLLM's attention", "vLLM's fused MoE"],
  record: "a-port/device-logprobs",
};
const reference = (check: Record<string, unknown>): PortManifestInput["reference"] => ({
  config: { model_type: "demo" },
  max_model_len: 4096,
  gates: [{ kind: "kv-capacity", expected_ratio: 2, tolerance: 0.02 }],
  device_check: check as typeof deviceCheck,
});

const measured = (id: string, value: number) =>
  record(id, {
    method: "single-run",
    unit: "nats",
    label: "largest |device - reference| prompt logprob per window of 192 tokens: gate passed",
    context: undefined,
    source: { kind: "measured", tool: "bringup device check" },
    arms: [{ name: deviceCheck.device, samples: [value], figure: { shape: "point", value } }],
  });

describe("the device check section", () => {
  it("shows the gate's latest record and says which parts vLLM served and that none were tested apart", () => {
    const m = manifest("a-port", { reference: reference(deviceCheck) });
    const page = renderDeviceCheck(port("/nowhere", m, "x", [measured("a-port/device-logprobs", 3.43e-6)]));
    expect(page).toContain("### Device code on vLLM (CPU)");
    expect(page).toContain("`a-port/device-logprobs`");
    expect(page).toContain("0\\.00000343 nats — single run");
    expect(page).toContain("- vLLM\\'s fused MoE");
    expect(page).toContain("Tested block by block instead: nothing; every part ran inside vLLM.");
  });

  it("lists the blocks tested block by block, and says when the check has not run", () => {
    const m = manifest("a-port", {
      reference: reference({ ...deviceCheck, block_by_block: ["the KDA recurrence (plain PyTorch)"] }),
    });
    const page = renderDeviceCheck(port("/nowhere", m, "x"));
    expect(page).toContain("not measured yet");
    expect(page).toContain("- the KDA recurrence \\(plain PyTorch\\)");
  });

  it("says the window length when the check sets one (past a sparse top-k)", () => {
    const m = manifest("a-port", { reference: reference({ ...deviceCheck, window_tokens: 512 }) });
    expect(renderDeviceCheck(port("/nowhere", m, "x"))).toContain("over corpus windows of 512 tokens");
    expect(
      renderDeviceCheck(port("/nowhere", manifest("a-port", { reference: reference(deviceCheck) }), "x")),
    ).not.toContain("corpus windows");
  });

  it("says why a port is not served by vLLM, and shows its block-by-block check and record", () => {
    const blocks = {
      test: "tests/test_demo_blocks.py",
      not_served: "its recurrent state has no vLLM cache here",
      blocks: ["the KDA recurrence"],
      record: "a-port/device-blocks",
    };
    const m = manifest("a-port", {
      reference: {
        config: { model_type: "demo" },
        max_model_len: 4096,
        gates: [{ kind: "kv-capacity", expected_ratio: 2, tolerance: 0.02 }],
        device_blocks: blocks,
      },
    });
    const checked = record("a-port/device-blocks", {
      method: "single-run",
      unit: "abs",
      label: "largest |plugin block - engine| over every layer output: gate passed",
      context: undefined,
      source: { kind: "measured", tool: "bringup device check" },
      arms: [{ name: "the plugin's blocks", samples: [2.62e-6], figure: { shape: "point", value: 2.62e-6 } }],
    });
    const page = renderDeviceCheck(port("/nowhere", m, "x", [checked]));
    expect(page).toContain("### Device code, block by block");
    expect(page).toContain("Not served by vLLM\\: its recurrent state has no vLLM cache here");
    expect(page).toContain("`a-port/device-blocks`");
    expect(page).toContain("0\\.00000262 abs — single run");
    expect(page).toContain("- the KDA recurrence");
  });

  it("is left out for a port without a device check", () => {
    expect(renderDeviceCheck(port("/nowhere", manifest("a-port"), "x"))).toBeUndefined();
  });
});
