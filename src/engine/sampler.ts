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
  const order = orderByLogit(logits, offset, vocab);
  const topK = params.topK !== undefined && params.topK > 0 ? Math.min(params.topK, vocab) : vocab;
  const kept = order.subarray(0, topK);
  const max = (logits[offset + (kept[0] as number)] as number) / temperature;
  const probs = new Float64Array(topK);
  for (let i = 0; i < topK; i++)
    probs[i] = Math.exp((logits[offset + (kept[i] as number)] as number) / temperature - max);
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

/** Ids whose packed sort key (32-bit logit key, then the id) still fits a double exactly. */
const PACKED_ID_LIMIT = 2 ** 21;

/**
 * Token ids by descending logit, lower id first among equals. Each logit's f32 bits become an
 * order-preserving integer packed above the id into one exact double, so a native numeric sort of
 * a Float64Array does the work (a comparator sort over the vocabulary cost more than the model's
 * matmuls at batch 1).
 */
export function orderByLogit(logits: Float32Array, offset: number, vocab: number): Int32Array {
  if (vocab > PACKED_ID_LIMIT) {
    const order = Array.from({ length: vocab }, (_, i) => i);
    order.sort((a, b) => (logits[offset + b] as number) - (logits[offset + a] as number) || a - b);
    return Int32Array.from(order);
  }
  const f = new Float32Array(1);
  const bits = new Uint32Array(f.buffer);
  const keys = new Float64Array(vocab);
  for (let i = 0; i < vocab; i++) {
    f[0] = (logits[offset + i] as number) + 0; // -0 becomes +0: the two compare equal
    const b = bits[0] as number;
    // Ascending for floats: negatives flipped whole, positives above them; then reversed.
    const ascending = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
    keys[i] = (0xffffffff - ascending) * PACKED_ID_LIMIT + i;
  }
  keys.sort();
  const order = new Int32Array(vocab);
  for (let i = 0; i < vocab; i++) order[i] = (keys[i] as number) % PACKED_ID_LIMIT;
  return order;
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
