import type { PromptLogprobs, ScoredToken } from "../engine/index.js";

/**
 * Prompt logprobs in typed arrays, to cross from the engine's thread whole and at once (a long
 * prompt's are hundreds of thousands of small objects, which the HTTP thread would otherwise
 * deserialize in one go) and be rebuilt there a slice per event-loop turn.
 */
export interface PackedPromptLogprobs {
  /** Each position's token id, -1 for a position without logprobs (the first). */
  readonly tokenIds: Int32Array;
  readonly logprobs: Float64Array;
  readonly ranks: Int32Array;
  /** How many alternatives each position has; they follow one another in topIds / topLogprobs. */
  readonly topCounts: Int32Array;
  readonly topIds: Int32Array;
  readonly topLogprobs: Float64Array;
}

export function packPromptLogprobs(prompt: PromptLogprobs): PackedPromptLogprobs {
  const n = prompt.length;
  const alternatives = prompt.reduce((sum, p) => sum + (p?.top?.length ?? 0), 0);
  const packed = {
    tokenIds: new Int32Array(n),
    logprobs: new Float64Array(n),
    ranks: new Int32Array(n),
    topCounts: new Int32Array(n),
    topIds: new Int32Array(alternatives),
    topLogprobs: new Float64Array(alternatives),
  };
  let at = 0;
  prompt.forEach((position, i) => {
    packed.tokenIds[i] = position?.tokenId ?? -1;
    if (position === null) return;
    packed.logprobs[i] = position.logprob;
    packed.ranks[i] = position.rank;
    packed.topCounts[i] = position.top?.length ?? 0;
    for (const alt of position.top ?? []) {
      packed.topIds[at] = alt.tokenId;
      packed.topLogprobs[at++] = alt.logprob;
    }
  });
  return packed;
}

/** The buffers to transfer with a packed message. */
export function packedBuffers(packed: PackedPromptLogprobs): ArrayBuffer[] {
  return Object.values(packed).map((array: Int32Array | Float64Array) => array.buffer as ArrayBuffer);
}

/** Positions rebuilt per event-loop turn. */
const SLICE = 256;

/** The prompt logprobs again, rebuilt SLICE positions per event-loop turn. */
export async function unpackPromptLogprobs(packed: PackedPromptLogprobs): Promise<PromptLogprobs> {
  const out: (ScoredToken | null)[] = [];
  let at = 0;
  for (let i = 0; i < packed.tokenIds.length; i++) {
    if (i > 0 && i % SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
    const tokenId = packed.tokenIds[i] as number;
    const count = packed.topCounts[i] as number;
    if (tokenId < 0) {
      out.push(null);
      continue;
    }
    const top = Array.from({ length: count }, (_, k) => ({
      tokenId: packed.topIds[at + k] as number,
      logprob: packed.topLogprobs[at + k] as number,
    }));
    at += count;
    out.push({ tokenId, logprob: packed.logprobs[i] as number, rank: packed.ranks[i] as number, top });
  }
  return out;
}
