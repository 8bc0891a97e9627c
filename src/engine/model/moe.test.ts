import { describe, expect, it } from "vitest";
import type { MoeSpec } from "../config.js";
import { route } from "./moe.js";

const base: MoeSpec = {
  numExperts: 4,
  topK: 2,
  intermediateSize: 8,
  scoring: "softmax",
  normTopKProb: true,
  routedScalingFactor: 1,
  numGroups: 1,
  topKGroups: 1,
};

describe("MoE routing", () => {
  it("softmax: picks the two largest and renormalizes their probabilities", () => {
    const r = route(new Float32Array([0, Math.log(3), Math.log(2), -5]), 0, base);
    expect(Array.from(r.experts)).toEqual([1, 2]);
    expect(r.weights[0]).toBeCloseTo(0.6, 6);
    expect(r.weights[1]).toBeCloseTo(0.4, 6);
  });

  it("sigmoid with a correction bias: the bias chooses, the unbiased score weighs", () => {
    const spec: MoeSpec = { ...base, scoring: "sigmoid", normTopKProb: false, routedScalingFactor: 2 };
    const logits = new Float32Array([2, 1, 0, -1]);
    const r = route(logits, 0, spec, new Float32Array([0, 0, 0, 10]));
    expect(Array.from(r.experts)).toEqual([3, 0]);
    expect(r.weights[0]).toBeCloseTo(2 / (1 + Math.exp(1)), 6);
    expect(r.weights[1]).toBeCloseTo(2 / (1 + Math.exp(-2)), 6);
  });

  it("breaks ties toward the lower expert id", () => {
    const r = route(new Float32Array([1, 1, 1, 1]), 0, base);
    expect(Array.from(r.experts)).toEqual([0, 1]);
  });
});
