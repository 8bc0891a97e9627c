import { describe, expect, it } from "vitest";
import { fixtureManifest } from "./fixtures/index.js";
import { NOT_SERVED_EXIT } from "./run-gates-script.js";
import { recipeSummary } from "./summary.js";

describe("recipeSummary", () => {
  it("says why a port without engine model code has no recipe", async () => {
    const summary = recipeSummary(await fixtureManifest("no-model-code"));
    expect(summary).toEqual({
      state: "none",
      why: "the port has no engine model code yet, so there is no device plugin to install",
    });
  });

  it("gives a port's build, serve and gate commands, and every pin with its origin", async () => {
    const summary = recipeSummary(await fixtureManifest("complete-compile"));
    expect(summary).toMatchObject({
      state: "generated",
      build: [
        "rm -rf .cache/recipe-wheels && python3 -m pip wheel --no-deps --wheel-dir .cache/recipe-wheels device-plugin/",
        "docker build -f ports/fixture-compile/recipe/Dockerfile -t bringup/fixture-compile .",
      ],
      env: [
        ["PT_HPU_LAZY_MODE", "0"],
        ["VLLM_T_COMPILE_DYNAMIC_SHAPES", "false"],
      ],
      plugin: "bringup-vllm",
      deviceRuns: [],
      device: {
        kind: "served",
        gates:
          "TINY_MODEL=/path/to/tiny MODEL=/path/to/weights sh /opt/bringup/ports/fixture-compile/tests/hpu/run_gates.sh",
      },
    });
    if (summary.state === "generated" && summary.device.kind === "served") {
      expect(summary.device.serve).toMatch(/^PT_HPU_LAZY_MODE=0 .* --enforce-eager$/);
      expect(
        summary.pins.map(({ name, pin, release }) => `${name} ${pin.value}${release ? " (release)" : ""}`),
      ).toEqual([
        "image vault.habana.ai/gaudi-docker/1.24.1/ubuntu24.04/habanalabs/pytorch-installer-2.11.0:latest",
        "Gaudi software 1.24.1-482",
        "Python 3.12",
        "habana-torch-plugin 1.24.1.482",
        "torch 2.11.0 (release)",
        "vllm 0.26.0+empty",
        "vllm-gaudi 0.26.0",
      ]);
      expect(summary.pins.every(({ pin }) => pin.origin.kind === "public-source")).toBe(true);
    }
  });

  it("claims no serve command or device-logprobs gate for a port vLLM does not serve", async () => {
    const summary = recipeSummary(await fixtureManifest("blocks-lazy"));
    expect(summary).toMatchObject({
      state: "generated",
      device: {
        kind: "not-served",
        why: "The fixture's recurrent state would need vLLM's Mamba-style cache, which vllm-gaudi's \"HPU\" backend lacks.",
        exit: NOT_SERVED_EXIT,
        check: "bringup device check fixture-blocks",
        record: "fixture-blocks/device-blocks",
      },
    });
    expect(JSON.stringify(summary)).not.toMatch(/device-logprobs|vllm\.entrypoints|TINY_MODEL/);
  });
});
