import { Rng } from "../tensor/random.js";
import { unitCode } from "./weights.js";

/**
 * The parts every constructed retrieval (copy) model shares, whatever its attention layout: each
 * token's random unit codes, an embedding that writes them into their residual slots, layers whose
 * MLP is zero, and an LM head that reads the copied output code back as its token.
 */

/**
 * The residual stream's slots, in order: own_m (the token's match code, m features), own_u (its
 * output code, u), prev_1..prev_window (match codes of the tokens 1..window back) and out_u (the
 * output code to copy, read by the LM head).
 */
export interface CopySlots {
  readonly m: number;
  readonly u: number;
  readonly window: number;
  readonly hidden: number;
  readonly ownM: number;
  readonly ownU: number;
  readonly prev: number;
  readonly outU: number;
}

export function copySlots(m: number, u: number, window: number): CopySlots {
  const prev = m + u;
  const outU = prev + window * m;
  return { m, u, window, hidden: outU + u, ownM: 0, ownU: m, prev, outU };
}

/** Each token's match code (`m` features) and output code (`u` features). */
export interface TokenCodes {
  readonly match: readonly Float32Array[];
  readonly output: readonly Float32Array[];
}

/** Codes for `vocab` tokens from one Rng(seed): every match code first, then every output code. */
export function tokenCodes(seed: number, vocab: number, m: number, u: number): TokenCodes {
  const rng = new Rng(seed);
  const match = Array.from({ length: vocab }, () => unitCode(rng, m));
  const output = Array.from({ length: vocab }, () => unitCode(rng, u));
  return { match, output };
}

/** Embedding rows [vocab, hidden] with token t's match code at `matchAt` and output code at `outputAt`. */
export function codeEmbedding(
  codes: TokenCodes,
  hidden: number,
  matchAt: number,
  outputAt: number,
): Float32Array {
  const embed = new Float32Array(codes.match.length * hidden);
  codes.match.forEach((code, t) => {
    embed.set(code, t * hidden + matchAt);
  });
  codes.output.forEach((code, t) => {
    embed.set(code, t * hidden + outputAt);
  });
  return embed;
}

/** LM head rows [vocab, hidden]: `scale` times token t's output code, read from the slot at `readAt`. */
export function codeLmHead(codes: TokenCodes, hidden: number, readAt: number, scale: number): Float32Array {
  const head = new Float32Array(codes.output.length * hidden);
  codes.output.forEach((code, t) => {
    for (const [r, x] of code.entries()) head[t * hidden + readAt + r] = scale * x;
  });
  return head;
}

/**
 * The induction head's query and key projections, [rows, hidden] each, writing features
 * `firstFeature` onward of head 0: the query holds m of the current token and the window - 1 before
 * it (own_m, prev_1..), the key m of the window tokens before (prev_1..prev_window), each times
 * `gain`, so the score at a position counts the tokens of the n-gram before it that agree.
 */
export function inductionQueryKey(
  slots: CopySlots,
  rows: number,
  firstFeature: number,
  gain: number,
): { readonly q: Float32Array; readonly k: Float32Array } {
  const { m, hidden, ownM, prev } = slots;
  const q = new Float32Array(rows * hidden);
  const k = new Float32Array(rows * hidden);
  for (let s = 0; s < slots.window; s++) {
    const querySlot = s === 0 ? ownM : prev + (s - 1) * m;
    const keySlot = prev + s * m;
    for (let r = 0; r < m; r++) {
      const row = firstFeature + s * m + r;
      q[row * hidden + querySlot + r] = gain;
      k[row * hidden + keySlot + r] = gain;
    }
  }
  return { q, k };
}

/**
 * The induction head's value and output projections: the value ([vRows, hidden], head 0's first u
 * features) is own_u, and o_proj ([hidden, oCols]) writes it into out_u.
 */
export function copyOutputCode(
  slots: CopySlots,
  vRows: number,
  oCols: number,
): { readonly v: Float32Array; readonly o: Float32Array } {
  const { u, hidden, ownU, outU } = slots;
  const v = new Float32Array(vRows * hidden);
  const o = new Float32Array(hidden * oCols);
  for (let r = 0; r < u; r++) {
    v[r * hidden + ownU + r] = 1;
    o[(outU + r) * oCols + r] = 1;
  }
  return { v, o };
}
