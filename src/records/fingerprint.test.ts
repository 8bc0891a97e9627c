import { describe, expect, it } from "vitest";
import { fingerprintDifferences, localMachine, localServerFingerprint } from "./fingerprint.js";

describe("fingerprintDifferences", () => {
  it("is empty for equal fingerprints only, never for an unstated one", () => {
    const fp = { host: "pod-1", software: { vllm: "0.9.0" }, server_flags: ["--a", "--b"] };
    expect(fingerprintDifferences(fp, structuredClone(fp))).toEqual([]);
    // No fingerprint is not a match: a reported figure says nothing about its conditions.
    expect(fingerprintDifferences(undefined, undefined)).toEqual(["fingerprint"]);
    expect(fingerprintDifferences(fp, undefined)).toEqual(["fingerprint"]);
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
  it("states this machine and a local server's host, machine and runtime", () => {
    const machine = localMachine();
    expect(machine.cores).toBeGreaterThan(0);
    expect(machine.memory_gib).toBeGreaterThan(0);
    expect(machine.cpu.length).toBeGreaterThan(0);
    const local = localServerFingerprint({ host: "127.0.0.1", software: { bringup: "0.1.0" } });
    expect(local.host).not.toBe("127.0.0.1");
    expect(local.machine).toEqual(machine);
    expect(local.software).toEqual({ bringup: "0.1.0", node: process.versions.node });
  });
});
