import { BringupError } from "../common/errors.js";
import { logSoftmax } from "./kernels/softmax.js";
import type { Rng } from "./tensor/random.js";

/** How the next token is chosen. temperature 0 is greedy (lowest id wins ties). */
export interface SamplingParams {
  /** Default 1. 0 means greedy. */
  readonly temperature?: number;
  /** Keep only the k most likely tokens; 0 or -1 means all (default). */
  readonly topK?: number;
  /** Keep the smallest set of tokens whose probability reaches p (default 1). */
  readonly topP?: number;
  /** Seed for a reproducible stream of choices; absent means a random seed. */
  readonly seed?: number;
}

export interface TokenLogprob {
  readonly tokenId: number;
  readonly logprob: number;
}

/** Throws INVALID_SAMPLING_PARAMS with the field to fix. */
export function validateSampling(p: SamplingParams): void {
  const bad = (field: string, why: string): never => {
    throw new BringupError("INVALID_SAMPLING_PARAMS", `${field} ${why}`, { subject: field });
  };
  if (p.temperature !== undefined && !(Number.isFinite(p.temperature) && p.temperature >= 0))
    bad("temperature", "must be a finite number >= 0.");
  if (p.topK !== undefined && !(Number.isInteger(p.topK) && (p.topK >= 0 || p.topK === -1)))
    bad("top_k", "must be -1, 0 or a positive integer.");
  if (p.topP !== undefined && !(Number.isFinite(p.topP) && p.topP > 0 && p.topP <= 1))
    bad("top_p", "must be in (0, 1].");
  if (p.seed !== undefined && !Number.isInteger(p.seed)) bad("seed", "must be an integer.");
}

/** Picks a token from logits[offset, offset+vocab) under `params`, drawing from `rng` when not greedy. */
export function sampleToken(
  logits: Float32Array,
  offset: number,
  vocab: number,
  params: SamplingParams,
  rng: Rng,
): number {
  const temperature = params.temperature ?? 1;
  if (temperature === 0) return argmax(logits, offset, vocab);
  const order = Array.from({ length: vocab }, (_, i) => i);
  order.sort((a, b) => (logits[offset + b] as number) - (logits[offset + a] as number) || a - b);
  const topK = params.topK !== undefined && params.topK > 0 ? Math.min(params.topK, vocab) : vocab;
  const kept = order.slice(0, topK);
  const max = (logits[offset + (kept[0] as number)] as number) / temperature;
  const probs = kept.map((id) => Math.exp((logits[offset + id] as number) / temperature - max));
  let total = probs.reduce((s, p) => s + p, 0);
  const topP = params.topP ?? 1;
  let n = kept.length;
  if (topP < 1) {
    let cumulative = 0;
    for (let i = 0; i < kept.length; i++) {
      cumulative += (probs[i] as number) / total;
      if (cumulative >= topP) {
        n = i + 1;
        break;
      }
    }
    total = probs.slice(0, n).reduce((s, p) => s + p, 0);
  }
  let u = rng.next() * total;
  for (let i = 0; i < n; i++) {
    u -= probs[i] as number;
    if (u < 0) return kept[i] as number;
  }
  return kept[n - 1] as number;
}

export function argmax(x: Float32Array, offset: number, n: number): number {
  let best = 0;
  let bestValue = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const v = x[offset + i] as number;
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

/**
 * The log-probability of `chosen` under the model's raw distribution (before temperature and
 * filtering, as vLLM reports it) and the `topN` most likely tokens, most likely first.
 */
export function logprobsOf(
  logits: Float32Array,
  offset: number,
  vocab: number,
  chosen: number,
  topN: number,
  scratch: Float64Array,
): { logprob: number; rank: number; top: TokenLogprob[] } {
  logSoftmax(logits, offset, vocab, scratch);
  const lp = scratch[chosen] as number;
  let rank = 1;
  for (let i = 0; i < vocab; i++) {
    const v = scratch[i] as number;
    if (v > lp || (v === lp && i < chosen)) rank++;
  }
  const top: TokenLogprob[] = [];
  if (topN > 0) {
    // Partial selection: keep a sorted list of at most topN entries.
    for (let i = 0; i < vocab; i++) {
      const v = scratch[i] as number;
      if (top.length === topN && v <= (top[topN - 1] as TokenLogprob).logprob) continue;
      let j = top.length;
      while (j > 0 && (top[j - 1] as TokenLogprob).logprob < v) j--;
      top.splice(j, 0, { tokenId: i, logprob: v });
      if (top.length > topN) top.pop();
    }
  }
  return { logprob: lp, rank, top };
}
