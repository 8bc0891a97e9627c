import { describe, expect, it } from "vitest";
import { fingerprintDifferences } from "./fingerprint.js";

describe("fingerprintDifferences", () => {
  it("is empty for equal fingerprints and for two unstated ones", () => {
    const fp = { host: "pod-1", software: { vllm: "0.9.0" }, server_flags: ["--a", "--b"] };
    expect(fingerprintDifferences(fp, structuredClone(fp))).toEqual([]);
    expect(fingerprintDifferences(undefined, undefined)).toEqual([]);
  });

  it("names every differing field, software packages by name", () => {
    const a = { host: "pod-1", hardware: "gaudi2", software: { vllm: "0.9.0", synapse: "1.24.1" } };
    const b = { host: "pod-2", hardware: "gaudi2", software: { vllm: "0.9.1", torch: "2.6" }, image: "x" };
    expect(fingerprintDifferences(a, b)).toEqual([
      "host",
      "image",
      "software.synapse",
      "software.torch",
      "software.vllm",
    ]);
  });

  it("counts a field stated on one side only, and flag order, as differences", () => {
    expect(fingerprintDifferences({ host: "h" }, {})).toEqual(["host"]);
    expect(
      fingerprintDifferences({ server_flags: ["--a", "--b"] }, { server_flags: ["--b", "--a"] }),
    ).toEqual(["server_flags"]);
  });
});
