import { describe, expect, it } from "vitest";
import type { ModelSwitch } from "../engine/index.js";
import { checkBuildSwitches } from "./build-check.js";

const declared: ModelSwitch[] = [
  { name: "mxfp4", values: ["fused", "unpacked"], default: "fused", description: "" },
  { name: "mla_form", values: ["absorbed", "expanded"], default: "absorbed", description: "" },
];
const arm = (switches: Record<string, string>) => [
  { where: "reference.benchmarks[0].b", build: { kv_layout: "full" as const, switches } },
];

describe("checkBuildSwitches", () => {
  it("accepts switches the model declares with values it allows", () => {
    expect(() =>
      checkBuildSwitches("p", arm({ mxfp4: "unpacked", mla_form: "expanded" }), declared),
    ).not.toThrow();
    expect(() =>
      checkBuildSwitches("p", [{ where: "reference", build: { kv_layout: "full" } }], []),
    ).not.toThrow();
  });

  it("refuses an unknown switch naming it, where it is set and what the model has", () => {
    expect(() => checkBuildSwitches("p", arm({ mxfp5: "fused" }), declared)).toThrow(
      "ports/p/port.yaml reference.benchmarks[0].b sets switch mxfp5, which the p model does not have (its switches: mxfp4, mla_form)",
    );
    expect(() => checkBuildSwitches("p", arm({ mxfp4: "fused" }), [])).toThrow(/it has no switches/);
  });

  it("refuses a value the switch does not allow, naming the allowed ones", () => {
    expect(() => checkBuildSwitches("p", arm({ mxfp4: "packed" }), declared)).toThrow(
      /sets mxfp4=packed, and switch mxfp4 is one of fused, unpacked/,
    );
  });
});
