import { describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { checkMoeSpec, type MoeSpec, route, routeTopKThenSoftmax } from "./routing.js";

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

  describe("grouped top-k", () => {
    // Logits whose sigmoid is exactly the wanted score (to f32 rounding).
    const logit = (p: number) => Math.log(p / (1 - p));
    const probs = [0.9, 0.1, 0.6, 0.5, 0.7, 0.7, 0.2, 0.95];
    const logits = new Float32Array(probs.map(logit));
    const grouped: MoeSpec = {
      numExperts: 8,
      topK: 3,
      intermediateSize: 8,
      scoring: "sigmoid",
      normTopKProb: true,
      routedScalingFactor: 2.5,
      numGroups: 4,
      topKGroups: 2,
    };

    it("scores groups by their top-2 corrected scores and picks only from the best groups", () => {
      // Corrected: [.9 .1 | .6 .5 | .7 .7 | .2 .45]; groups 1.0, 1.1, 1.4, 0.65 -> groups 2 and 1.
      // Expert 0 has the best score of all but its group is out. Eligible 2..5; top-3 by corrected
      // score: 4 and 5 (a tie, lower id first), then 2. Weights from the uncorrected scores
      // .7 .7 .6, renormalized by their sum 2.0 and scaled by 2.5.
      const bias = new Float32Array([0, 0, 0, 0, 0, 0, 0, -0.5]);
      const r = route(logits, 0, grouped, bias);
      expect(Array.from(r.experts)).toEqual([4, 5, 2]);
      expect(r.weights[0]).toBeCloseTo((0.7 / 2) * 2.5, 6);
      expect(r.weights[1]).toBeCloseTo((0.7 / 2) * 2.5, 6);
      expect(r.weights[2]).toBeCloseTo((0.6 / 2) * 2.5, 6);
    });

    it("without the bias the last group wins a place, and its expert weighs its own score", () => {
      // Groups 1.0, 1.1, 1.4, 1.15 -> groups 2 and 3; eligible 4..7; top-3: 7, 4, 5.
      const r = route(logits, 0, { ...grouped, normTopKProb: false, routedScalingFactor: 1 });
      expect(Array.from(r.experts)).toEqual([7, 4, 5]);
      expect(r.weights[0]).toBeCloseTo(0.95, 6);
      expect(r.weights[1]).toBeCloseTo(0.7, 6);
      expect(r.weights[2]).toBeCloseTo(0.7, 6);
    });

    it("softmax scores: the best group alone, no renormalization", () => {
      // Probabilities .1 .2 | .3 .4: group 1 (0.7) wins; its best expert 3 keeps its 0.4.
      const spec: MoeSpec = { ...base, topK: 1, normTopKProb: false, numGroups: 2, topKGroups: 1 };
      const r = route(new Float32Array([0, Math.log(2), Math.log(3), Math.log(4)]), 0, spec);
      expect(Array.from(r.experts)).toEqual([3]);
      expect(r.weights[0]).toBeCloseTo(0.4, 6);
    });

    it("breaks group ties toward the lower group id", () => {
      const r = route(new Float32Array(8), 0, { ...grouped, topK: 2, topKGroups: 1 });
      expect(Array.from(r.experts)).toEqual([0, 1]);
    });

    it("rejects groupings that cannot be routed", () => {
      expect(() => checkMoeSpec({ ...grouped, numGroups: 3 })).toThrow(/equal groups/);
      expect(() => checkMoeSpec({ ...grouped, topKGroups: 5 })).toThrow(/topk_group/);
      expect(() => checkMoeSpec({ ...grouped, topK: 5 })).toThrow(/eligible groups/);
      expect(() => checkMoeSpec(grouped)).not.toThrow();
    });
  });

  it("routeTopKThenSoftmax picks the order a full sort gives: highest first, ties to the lower id", () => {
    const rng = new Rng(7);
    for (let trial = 0; trial < 2000; trial++) {
      const E = 1 + (trial % 37);
      const k = 1 + (trial % E);
      // Few distinct values, so ties are common; signed zeros and infinities among them.
      const pool = [0, -0, 1, -1, 2.5, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
      const logits = Float32Array.from({ length: E + 2 }, () =>
        trial % 2 === 0 ? (pool[Math.floor(rng.next() * pool.length)] as number) : rng.normal(),
      );
      const order = Array.from({ length: E }, (_, e) => e);
      order.sort((a, b) => (logits[2 + b] as number) - (logits[2 + a] as number) || a - b);
      expect(Array.from(routeTopKThenSoftmax(logits, 2, E, k).experts)).toEqual(order.slice(0, k));
    }
  });
});
