import { Rng } from "../tensor/random.js";
import { filled, type PutF32, unitCode } from "./weights.js";

/**
 * The parts every constructed retrieval (copy) model shares, whatever its attention layout: each
 * token's random unit codes, an embedding that writes them into their residual slots, layers whose
 * MLP is zero, and an LM head that reads the copied output code back as its token.
 */

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
 * Layer `i`'s norms and a zero MLP of width 1; returns the layer's name prefix. `inputNorm` is the
 * input norm's weight (|x|/sqrt(hidden) hands the residual stream to attention unscaled).
 */
export function zeroMlpLayer(put: PutF32, i: number, hidden: number, inputNorm: number): string {
  const p = `model.layers.${i}`;
  put(`${p}.input_layernorm.weight`, [hidden], filled(hidden, inputNorm));
  put(`${p}.post_attention_layernorm.weight`, [hidden], filled(hidden, 1));
  put(`${p}.mlp.gate_proj.weight`, [1, hidden], new Float32Array(hidden));
  put(`${p}.mlp.up_proj.weight`, [1, hidden], new Float32Array(hidden));
  put(`${p}.mlp.down_proj.weight`, [hidden, 1], new Float32Array(hidden));
  return p;
}
