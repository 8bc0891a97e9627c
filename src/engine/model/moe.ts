import type { MoeSpec } from "../config.js";

/** One token's chosen experts and their mixing weights, in rank order. */
export interface Routing {
  readonly experts: Int32Array;
  readonly weights: Float64Array;
}

/**
 * Picks the top-k experts from router logits. Scores are softmax or sigmoid of the logits; the
 * optional `bias` only affects which experts are chosen (score correction), not their weights.
 * Ties go to the lower expert id so the choice is deterministic.
 */
export function route(logits: Float32Array, offset: number, spec: MoeSpec, bias?: Float32Array): Routing {
  const E = spec.numExperts;
  const scores = new Float64Array(E);
  if (spec.scoring === "softmax") {
    let max = Number.NEGATIVE_INFINITY;
    for (let e = 0; e < E; e++) max = Math.max(max, logits[offset + e] as number);
    let sum = 0;
    for (let e = 0; e < E; e++) {
      scores[e] = Math.exp((logits[offset + e] as number) - max);
      sum += scores[e] as number;
    }
    for (let e = 0; e < E; e++) scores[e] = (scores[e] as number) / sum;
  } else {
    for (let e = 0; e < E; e++) scores[e] = 1 / (1 + Math.exp(-(logits[offset + e] as number)));
  }
  const order = Array.from({ length: E }, (_, e) => e);
  const key = (e: number) => (scores[e] as number) + (bias === undefined ? 0 : (bias[e] as number));
  order.sort((a, b) => key(b) - key(a) || a - b);
  const experts = new Int32Array(spec.topK);
  const weights = new Float64Array(spec.topK);
  let total = 0;
  for (let i = 0; i < spec.topK; i++) {
    const e = order[i] as number;
    experts[i] = e;
    weights[i] = scores[e] as number;
    total += scores[e] as number;
  }
  for (let i = 0; i < spec.topK; i++) {
    const w = spec.normTopKProb ? (weights[i] as number) / total : (weights[i] as number);
    weights[i] = w * spec.routedScalingFactor;
  }
  return { experts, weights };
}
