import { describe, expect, it } from "vitest";
import { type MoeSpec, Rng, route } from "../../../../src/engine/index.js";

/**
 * DeepSeek-V3's gate (inference/model.py `Gate.forward`, noaux_tc as GLM-5 and vLLM run it) written
 * out: sigmoid scores, the score-correction bias added for choosing only, groups scored by the sum
 * of their two best corrected scores, the best topk_group groups kept, the top-k corrected scores
 * of those chosen (ties to the lower expert id, the engine's stated rule), weights from the
 * uncorrected scores, renormalized and scaled.
 */
function referenceGate(logits: readonly number[], bias: readonly number[], spec: MoeSpec) {
  const E = spec.numExperts;
  const scores = logits.map((x) => 1 / (1 + Math.exp(-x)));
  const corrected = scores.map((s, e) => s + (bias[e] as number));
  const size = E / spec.numGroups;
  const groupScore = Array.from({ length: spec.numGroups }, (_, g) => {
    const [first, second] = corrected.slice(g * size, (g + 1) * size).sort((a, b) => b - a);
    return (first as number) + (second ?? 0);
  });
  const keptGroups = groupScore
    .map((s, g) => [s, g] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .slice(0, spec.topKGroups)
    .map(([, g]) => g);
  const candidates = corrected
    .map((s, e) => [s, e] as const)
    .filter(([, e]) => keptGroups.includes(Math.floor(e / size)))
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .slice(0, spec.topK)
    .map(([, e]) => e);
  const total = candidates.reduce((a, e) => a + (scores[e] as number), 0);
  return {
    experts: candidates,
    weights: candidates.map((e) => ((scores[e] as number) / total) * spec.routedScalingFactor),
  };
}

const SPEC: MoeSpec = {
  numExperts: 16,
  topK: 4,
  intermediateSize: 8,
  scoring: "sigmoid",
  normTopKProb: true,
  routedScalingFactor: 2.5,
  numGroups: 4,
  topKGroups: 2,
};

function check(logits: readonly number[], bias: readonly number[], spec = SPEC) {
  const got = route(Float32Array.from(logits), 0, spec, Float32Array.from(bias));
  // The engine reads f32 logits and biases; the reference gets the same values.
  const want = referenceGate(
    Array.from(Float32Array.from(logits)),
    Array.from(Float32Array.from(bias)),
    spec,
  );
  expect(Array.from(got.experts)).toEqual(want.experts);
  Array.from(got.weights).forEach((w, i) => {
    expect(w).toBeCloseTo(want.weights[i] as number, 12);
  });
  return got;
}

describe("GLM-5's router against DeepSeek-V3's gate", () => {
  it("agrees on random logits and score-correction biases, grouped and ungrouped", () => {
    const rng = new Rng(9);
    for (let trial = 0; trial < 200; trial++) {
      const logits = Array.from({ length: 16 }, () => rng.normal() * 2);
      const bias = Array.from({ length: 16 }, () => rng.normal() * 0.5);
      check(logits, bias);
      check(logits, bias, { ...SPEC, numGroups: 1, topKGroups: 1 });
    }
  });

  it("lets the bias choose an expert but weighs it by its uncorrected score", () => {
    const logits = Array(16).fill(0);
    logits[3] = -4;
    const bias = Array(16).fill(0);
    bias[3] = 2;
    const { experts, weights } = check(logits, bias);
    const rank = Array.from(experts).indexOf(3);
    expect(rank).toBe(0);
    const sigmoid = 1 / (1 + Math.exp(4));
    expect(weights[rank]).toBeCloseTo((sigmoid / (sigmoid + 3 * 0.5)) * 2.5, 12);
  });

  it("breaks ties between equal corrected scores and equal groups toward the lower id", () => {
    // Every expert and every group equal: groups 0 and 1, experts 0..3 of them.
    const equal = check(Array(16).fill(0.3), Array(16).fill(0.1));
    expect(Array.from(equal.experts)).toEqual([0, 1, 2, 3]);
    // Experts 9 and 5 tie exactly after correction (0.5 + 0.25 both), above all others: 5 is first.
    const logits = Array(16).fill(-3);
    const bias = Array(16).fill(0);
    for (const e of [9, 5]) {
      logits[e] = 0;
      bias[e] = 0.25;
    }
    const tied = check(logits, bias, { ...SPEC, numGroups: 1, topKGroups: 1, topK: 1 });
    expect(Array.from(tied.experts)).toEqual([5]);
  });
});
