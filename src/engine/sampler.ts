import { BringupError } from "../common/errors.js";
import { logSoftmax } from "./kernels/softmax.js";

/** Below this temperature sampling is greedy, as in vLLM (dividing by it overflows the softmax). */
export const GREEDY_TEMPERATURE = 1e-5;

/** How the next token is chosen. temperature 0 is greedy (lowest id wins ties). */
export interface SamplingParams {
  /** Default 1. Below 1e-5 means greedy. */
  readonly temperature?: number;
  /** Keep only the k most likely tokens; 0 or -1 means all (default). */
  readonly topK?: number;
  /** Keep the smallest set of tokens whose probability reaches p (default 1). */
  readonly topP?: number;
  /** Keep only tokens whose probability is at least min_p times the most likely one's (default 0). */
  readonly minP?: number;
  /** vLLM's: subtracted from the logit of every token already generated (default 0). */
  readonly presencePenalty?: number;
  /** vLLM's: subtracted once per earlier occurrence in the output (default 0). */
  readonly frequencyPenalty?: number;
  /** vLLM's: logits of tokens in the prompt or output divided (positive) or multiplied by it (default 1). */
  readonly repetitionPenalty?: number;
  /** Added to the logits of these token ids before the choice (OpenAI's logit_bias). */
  readonly logitBias?: ReadonlyMap<number, number>;
  /** Only these token ids may be chosen. */
  readonly allowedTokenIds?: readonly number[];
  /** Token sequences never generated: a sequence's last token is banned after its prefix. */
  readonly badWords?: readonly (readonly number[])[];
  /** Seed for a reproducible stream of choices, all 64 bits used; absent means a random seed. */
  readonly seed?: number | bigint;
}

/** What a sequence has seen so far, for penalties, bad words and banned tokens. */
export interface SamplingHistory {
  readonly promptTokenIds: readonly number[];
  readonly outputTokenIds: readonly number[];
  /** Tokens that may not be chosen now (stop tokens before min_tokens). */
  readonly banned?: ReadonlySet<number>;
}

/** A source of uniform floats in [0, 1). */
export interface UniformSource {
  next(): number;
}

const MASK64 = (1n << 64n) - 1n;

/**
 * SplitMix64 over a 64-bit state: every bit of a 64-bit seed changes the stream (the tensor Rng
 * keeps 32). BigInt costs microseconds per draw, nothing beside a model step.
 */
export class SeededStream implements UniformSource {
  private state: bigint;

  constructor(seed: number | bigint) {
    this.state = BigInt.asUintN(64, BigInt(seed));
  }

  next(): number {
    this.state = (this.state + 0x9e3779b97f4a7c15n) & MASK64;
    let z = this.state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
    z ^= z >> 31n;
    return Number(z >> 11n) / 9007199254740992;
  }
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
  if (
    p.seed !== undefined &&
    !(typeof p.seed === "bigint"
      ? p.seed >= -(1n << 63n) && p.seed < 1n << 64n
      : Number.isInteger(p.seed) && Math.abs(p.seed) < 2 ** 64)
  )
    bad("seed", "must be an integer that fits 64 bits.");
  if (p.minP !== undefined && !(Number.isFinite(p.minP) && p.minP >= 0 && p.minP <= 1))
    bad("min_p", "must be in [0, 1].");
  for (const [field, v] of [
    ["presence_penalty", p.presencePenalty],
    ["frequency_penalty", p.frequencyPenalty],
  ] as const) {
    if (v !== undefined && !(Number.isFinite(v) && v >= -2 && v <= 2)) bad(field, "must be in [-2, 2].");
  }
  if (p.repetitionPenalty !== undefined && !(Number.isFinite(p.repetitionPenalty) && p.repetitionPenalty > 0))
    bad("repetition_penalty", "must be a number > 0.");
  if (p.allowedTokenIds !== undefined && p.allowedTokenIds.length === 0)
    bad("allowed_token_ids", "must list at least one token id.");
}

/** Whether any parameter changes the logits before the choice (else the raw row is used as is). */
function adjusts(p: SamplingParams, h: SamplingHistory | undefined): boolean {
  return (
    (h?.banned?.size ?? 0) > 0 ||
    (p.presencePenalty ?? 0) !== 0 ||
    (p.frequencyPenalty ?? 0) !== 0 ||
    (p.repetitionPenalty ?? 1) !== 1 ||
    p.allowedTokenIds !== undefined ||
    (p.logitBias?.size ?? 0) > 0 ||
    (p.badWords?.length ?? 0) > 0
  );
}

/**
 * The row after vLLM's logits processors, in vLLM's order: banned tokens to -inf, logit bias,
 * disallowed tokens and bad words to -inf, then repetition, frequency and presence penalties. A copy; the raw row stays
 * for logprobs.
 */
export function adjustLogits(
  logits: Float32Array,
  offset: number,
  vocab: number,
  p: SamplingParams,
  h: SamplingHistory,
): Float32Array {
  const row = logits.slice(offset, offset + vocab);
  const ban = (id: number) => {
    if (id >= 0 && id < vocab) row[id] = Number.NEGATIVE_INFINITY;
  };
  for (const id of h.banned ?? []) ban(id);
  for (const [id, bias] of p.logitBias ?? []) if (id < vocab) row[id] = (row[id] as number) + bias;
  if (p.allowedTokenIds !== undefined) {
    const allowed = new Set(p.allowedTokenIds);
    for (let i = 0; i < vocab; i++) if (!allowed.has(i)) row[i] = Number.NEGATIVE_INFINITY;
  }
  const out = h.outputTokenIds;
  for (const word of p.badWords ?? []) {
    const prefix = word.length - 1;
    if (prefix > out.length) continue;
    let matches = true;
    for (let i = 0; i < prefix && matches; i++) matches = out[out.length - prefix + i] === word[i];
    if (matches) ban(word[prefix] as number);
  }
  const repetition = p.repetitionPenalty ?? 1;
  if (repetition !== 1) {
    const seen = new Set([...h.promptTokenIds, ...out]);
    for (const id of seen) {
      const v = row[id] as number;
      row[id] = v > 0 ? v / repetition : v * repetition;
    }
  }
  const frequency = p.frequencyPenalty ?? 0;
  const presence = p.presencePenalty ?? 0;
  if (frequency !== 0 || presence !== 0) {
    const counts = new Map<number, number>();
    for (const id of out) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const [id, n] of counts) row[id] = (row[id] as number) - frequency * n - presence;
  }
  return row;
}

/** Picks a token from logits[offset, offset+vocab) under `params`, drawing from `rng` when not greedy. */
export function sampleToken(
  logits: Float32Array,
  offset: number,
  vocab: number,
  params: SamplingParams,
  rng: UniformSource,
  history?: SamplingHistory,
): number {
  if (history !== undefined && adjusts(params, history)) {
    return sampleToken(adjustLogits(logits, offset, vocab, params, history), 0, vocab, params, rng);
  }
  const temperature = params.temperature ?? 1;
  if (temperature < GREEDY_TEMPERATURE) return argmax(logits, offset, vocab);
  const { kept, probs, n, total } = keptTokens(logits, offset, vocab, params, temperature);
  let u = rng.next() * total;
  for (let i = 0; i < n; i++) {
    u -= probs[i] as number;
    if (u < 0) return kept[i] as number;
  }
  return kept[n - 1] as number;
}

/**
 * The tokens sampling may choose from under temperature, top-k, min-p and top-p: the first `n` of
 * `kept` (most likely first) with unnormalized weights `probs` summing to `total`.
 */
function keptTokens(
  logits: Float32Array,
  offset: number,
  vocab: number,
  params: SamplingParams,
  temperature: number,
): { kept: Int32Array; probs: Float64Array; n: number; total: number } {
  const order = orderByLogit(logits, offset, vocab);
  const topK = params.topK !== undefined && params.topK > 0 ? Math.min(params.topK, vocab) : vocab;
  const kept = order.subarray(0, topK);
  const max = (logits[offset + (kept[0] as number)] as number) / temperature;
  const probs = new Float64Array(topK);
  for (let i = 0; i < topK; i++)
    probs[i] = Math.exp((logits[offset + (kept[i] as number)] as number) / temperature - max);
  let n = kept.length;
  const minP = params.minP ?? 0;
  if (minP > 0) {
    // probs[0] is the most likely token's, scaled to 1; the rest are relative to it.
    while (n > 1 && (probs[n - 1] as number) < minP) n--;
  }
  let total = probs.slice(0, n).reduce((s, p) => s + p, 0);
  const topP = params.topP ?? 1;
  if (topP < 1) {
    let cumulative = 0;
    for (let i = 0; i < n; i++) {
      cumulative += (probs[i] as number) / total;
      if (cumulative >= topP) {
        n = i + 1;
        break;
      }
    }
    total = probs.slice(0, n).reduce((s, p) => s + p, 0);
  }
  return { kept, probs, n, total };
}

/**
 * The distribution sampleToken draws from (not greedy), over the whole vocabulary: each token's
 * probability after the logits processors, temperature, top-k, min-p and top-p; 0 where filtered.
 */
export function tokenProbabilities(
  logits: Float32Array,
  offset: number,
  vocab: number,
  params: SamplingParams,
  history?: SamplingHistory,
): Float64Array {
  if (history !== undefined && adjusts(params, history))
    return tokenProbabilities(adjustLogits(logits, offset, vocab, params, history), 0, vocab, params);
  const { kept, probs, n, total } = keptTokens(logits, offset, vocab, params, params.temperature ?? 1);
  const out = new Float64Array(vocab);
  for (let i = 0; i < n; i++) out[kept[i] as number] = (probs[i] as number) / total;
  return out;
}

/** A token drawn from `probs` (weights over the vocabulary, summing to `total`). */
export function sampleFrom(probs: Float64Array, rng: UniformSource, total = 1): number {
  let u = rng.next() * total;
  let last = 0;
  for (let i = 0; i < probs.length; i++) {
    const p = probs[i] as number;
    if (p <= 0) continue;
    last = i;
    u -= p;
    if (u < 0) return i;
  }
  return last;
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
