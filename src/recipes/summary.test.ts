import { describe, expect, it } from "vitest";
import { fixtureManifest } from "./fixtures/index.js";
import { recipeSummary } from "./summary.js";

describe("recipeSummary", () => {
  it("lists what an unpinned port still needs", async () => {
    const summary = recipeSummary(await fixtureManifest("partial"));
    expect(summary.state).toBe("unpinned");
    if (summary.state === "unpinned")
      expect(summary.missing.map((pin) => pin.field)).toContain("software.base_image");
  });

  it("gives a pinned port's build, serve and gate commands", async () => {
    const summary = recipeSummary(await fixtureManifest("complete-compile"));
    expect(summary).toMatchObject({
      state: "pinned",
      build: "docker build -f ports/fixture-compile/recipe/Dockerfile -t bringup/fixture-compile .",
      env: [
        ["PT_HPU_LAZY_MODE", "0"],
        ["VLLM_T_COMPILE_DYNAMIC_SHAPES", "false"],
      ],
      gaudiSoftware: "1.24.1-100",
      gates: "MODEL=/path/to/weights sh /opt/bringup/ports/fixture-compile/tests/hpu/run_gates.sh",
    });
    if (summary.state === "pinned") {
      expect(summary.serve).toMatch(/^PT_HPU_LAZY_MODE=0 .* --enforce-eager$/);
      expect(summary.packages[0]).toEqual({ name: "habana-torch-plugin", version: "1.24.1.100" });
    }
  });
});
