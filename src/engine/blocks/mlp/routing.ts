import { BringupError } from "../../../common/errors.js";

/** How a mixture of experts routes each token. */
export interface MoeSpec {
  readonly numExperts: number;
  readonly topK: number;
  readonly intermediateSize: number;
  readonly scoring: "softmax" | "sigmoid" | "sqrtsoftplus";
  /** Renormalize the chosen experts' scores to sum to 1. */
  readonly normTopKProb: boolean;
  readonly routedScalingFactor: number;
  /**
   * Grouped top-k (DeepSeek-V3 style): the experts form `numGroups` equal groups, each group is
   * scored by the sum of its two best (bias-corrected) scores, and only the `topKGroups` best groups
   * are eligible for the top-k. 1 and 1 mean no grouping.
   */
  readonly numGroups: number;
  readonly topKGroups: number;
}

/** One token's chosen experts and their mixing weights, in rank order. */
export interface Routing {
  readonly experts: Int32Array;
  readonly weights: Float64Array;
}

/** Checks that a MoE spec's grouping can be routed; throws MODEL_CONFIG_INVALID saying what to fix. */
export function checkMoeSpec(spec: MoeSpec): void {
  const fail = (message: string): never => {
    throw new BringupError("MODEL_CONFIG_INVALID", `${message}; fix the model config's MoE fields.`, {
      subject: "moe",
    });
  };
  const { numExperts: E, topK, numGroups: G, topKGroups } = spec;
  if (!Number.isInteger(topK) || topK < 1 || topK > E)
    fail(`top-k ${topK} must be between 1 and the ${E} experts`);
  if (!Number.isInteger(G) || G < 1 || E % G !== 0) fail(`${E} experts do not split into ${G} equal groups`);
  if (!Number.isInteger(topKGroups) || topKGroups < 1 || topKGroups > G)
    fail(`topk_group ${topKGroups} must be between 1 and the ${G} groups`);
  if (topK > topKGroups * (E / G))
    fail(`top-k ${topK} exceeds the ${topKGroups * (E / G)} experts in the ${topKGroups} eligible groups`);
}

/**
 * Picks the top-k experts from router logits. Scores are routerScores of the logits; the
 * optional score-correction `bias` only affects which experts are chosen, not their weights.
 *
 * Grouped top-k (DeepSeek-V3): with numGroups > 1 the experts form equal consecutive groups, each
 * scored by the sum of its two best corrected scores; only the topKGroups best groups are
 * eligible (the others are excluded outright, as vLLM does, rather than scored 0). The top-k of the
 * eligible experts are weighted by their uncorrected scores, renormalized to sum to 1 when
 * normTopKProb, then multiplied by routedScalingFactor. Ties go to the lower group or expert id so
 * the choice is deterministic.
 */
export function route(logits: Float32Array, offset: number, spec: MoeSpec, bias?: Float32Array): Routing {
  const E = spec.numExperts;
  const scores = routerScores(logits, offset, spec);
  const corrected = new Float64Array(E);
  for (let e = 0; e < E; e++)
    corrected[e] = (scores[e] as number) + (bias === undefined ? 0 : (bias[e] as number));
  let candidates = Array.from({ length: E }, (_, e) => e);
  const G = spec.numGroups;
  if (G > 1 && spec.topKGroups < G) {
    const size = E / G;
    const groupScore = new Float64Array(G);
    for (let g = 0; g < G; g++) {
      let best = Number.NEGATIVE_INFINITY;
      let second = Number.NEGATIVE_INFINITY;
      for (let e = g * size; e < (g + 1) * size; e++) {
        const s = corrected[e] as number;
        if (s > best) {
          second = best;
          best = s;
        } else if (s > second) second = s;
      }
      // A group of one expert is scored by that expert alone.
      groupScore[g] = size === 1 ? best : best + second;
    }
    const groups = Array.from({ length: G }, (_, g) => g);
    groups.sort((a, b) => (groupScore[b] as number) - (groupScore[a] as number) || a - b);
    const eligible = groups.slice(0, spec.topKGroups).sort((a, b) => a - b);
    candidates = eligible.flatMap((g) => Array.from({ length: size }, (_, i) => g * size + i));
  }
  candidates.sort((a, b) => (corrected[b] as number) - (corrected[a] as number) || a - b);
  return weigh(scores, Int32Array.from(candidates.slice(0, spec.topK)), spec);
}

/**
 * The router scores of one token: softmax, sigmoid, or DeepSeek-V4's sqrt(softplus(logit))
 * (HF `ACT2FN["sqrtsoftplus"]`), in float64.
 */
export function routerScores(logits: Float32Array, offset: number, spec: MoeSpec): Float64Array {
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
  } else if (spec.scoring === "sigmoid") {
    for (let e = 0; e < E; e++) scores[e] = 1 / (1 + Math.exp(-(logits[offset + e] as number)));
  } else {
    for (let e = 0; e < E; e++) scores[e] = Math.sqrt(softplus(logits[offset + e] as number));
  }
  return scores;
}

/** log(1 + e^x) without overflow. */
function softplus(x: number): number {
  return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
}

/**
 * The chosen `experts` weighted by their scores (renormalized to sum to 1 when normTopKProb),
 * times routedScalingFactor. Hash routing (DeepSeek-V4's first layers) chooses by token id and
 * weighs the same way.
 */
export function weigh(scores: Float64Array, experts: Int32Array, spec: MoeSpec): Routing {
  const k = experts.length;
  const weights = new Float64Array(k);
  let total = 0;
  for (let i = 0; i < k; i++) {
    weights[i] = scores[experts[i] as number] as number;
    total += weights[i] as number;
  }
  for (let i = 0; i < k; i++) {
    const w = spec.normTopKProb ? (weights[i] as number) / total : (weights[i] as number);
    weights[i] = w * spec.routedScalingFactor;
  }
  return { experts, weights };
}

/**
 * gpt-oss's routing: the top-k router logits (ties to the lower expert id), then a softmax over
 * those k alone, so the chosen experts' weights sum to 1. Written into `into` (k long) where
 * given: a layer routing one token per step reuses one, leaving nothing to collect.
 */
export function routeTopKThenSoftmax(
  logits: Float32Array,
  offset: number,
  E: number,
  topK: number,
  into: Routing = { experts: new Int32Array(topK), weights: new Float64Array(topK) },
): Routing {
  const { experts, weights } = into;
  topKOrder(logits, offset, E, experts);
  const max = logits[offset + (experts[0] as number)] as number;
  let sum = 0;
  for (let r = 0; r < topK; r++) {
    weights[r] = Math.exp((logits[offset + (experts[r] as number)] as number) - max);
    sum += weights[r] as number;
  }
  for (let r = 0; r < topK; r++) weights[r] = (weights[r] as number) / sum;
  return into;
}

/**
 * The `experts.length` experts of the highest logits in rows [offset, offset + E), highest first
 * and ties to the lower id, into `experts`: each expert inserted into the k kept so far (no sort
 * of all E). A NaN logit takes the full sort, whose order with NaN is its own.
 */
function topKOrder(logits: Float32Array, offset: number, E: number, experts: Int32Array): void {
  const k = experts.length;
  let kept = 0;
  for (let e = 0; e < E; e++) {
    const v = logits[offset + e] as number;
    if (Number.isNaN(v)) {
      experts.set(sortedTopK(logits, offset, E, k));
      return;
    }
    // Only a strictly higher logit passes a kept one, so equal logits stay in id order.
    let at = kept;
    while (at > 0 && v > (logits[offset + (experts[at - 1] as number)] as number)) at--;
    if (at >= k) continue;
    for (let i = Math.min(kept, k - 1); i > at; i--) experts[i] = experts[i - 1] as number;
    experts[at] = e;
    if (kept < k) kept++;
  }
}

function sortedTopK(logits: Float32Array, offset: number, E: number, k: number): Int32Array {
  const order = Array.from({ length: E }, (_, e) => e);
  order.sort((a, b) => (logits[offset + b] as number) - (logits[offset + a] as number) || a - b);
  return Int32Array.from(order.slice(0, k));
}
