import {
  type GeneratedToken,
  type PromptLogprobs,
  type ScoredToken,
  scoredToken,
  type TextTokenizer,
} from "../engine/index.js";
import { LazyList } from "./json-stream.js";

/** How a token is shown in logprobs: its text, or vLLM's `token_id:N` (return_tokens_as_token_ids). */
export type TokenNamer = Pick<TextTokenizer, "tokenText">;

export function tokenNamer(tokenizer: TextTokenizer, asTokenIds: boolean): TokenNamer {
  return asTokenIds ? { tokenText: (id) => `token_id:${id}` } : tokenizer;
}

/** JSON has no -Infinity; vLLM reports impossible tokens as -9999.0, and so do we. */
function finite(logprob: number): number {
  return Number.isFinite(logprob) ? logprob : -9999;
}

/** One position of the legacy completions logprobs: a token, or a prompt token without a logprob. */
export interface PositionLogprob {
  readonly tokenId: number;
  /** null for the first prompt token, which nothing predicts. */
  readonly scored: ScoredToken | null;
}

/** OpenAI's legacy completions logprobs object. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}

/**
 * Positions in the completions shape. `top` caps the alternatives shown per position; like vLLM,
 * the chosen token is listed among them too. `offset` is where the first token's text starts in
 * the choice's text; the returned `end` is where the next position's would start.
 */
export function completionLogprobs(
  tokenizer: TokenNamer,
  positions: readonly PositionLogprob[],
  top: number,
  offset: number,
): { logprobs: CompletionLogprobs; end: number } {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = offset;
  for (const { tokenId, scored } of positions) {
    const text = tokenizer.tokenText(tokenId);
    out.tokens.push(text);
    out.text_offset.push(at);
    at += text.length;
    if (scored === null) {
      out.token_logprobs.push(null);
      out.top_logprobs.push(null);
      continue;
    }
    out.token_logprobs.push(finite(scored.logprob));
    const alternatives: Record<string, number> = {};
    for (const alt of (scored.top ?? []).slice(0, top))
      alternatives[tokenizer.tokenText(alt.tokenId)] = finite(alt.logprob);
    alternatives[text] = finite(scored.logprob);
    out.top_logprobs.push(alternatives);
  }
  return { logprobs: out, end: at };
}

/** Appends `more` (a later chunk's positions) to `into`. */
export function appendCompletionLogprobs(into: CompletionLogprobs, more: CompletionLogprobs): void {
  into.tokens.push(...more.tokens);
  into.token_logprobs.push(...more.token_logprobs);
  into.top_logprobs.push(...more.top_logprobs);
  into.text_offset.push(...more.text_offset);
}

export interface ChatTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

/**
 * Generated tokens in the chat completions shape: `content` entries with `top` alternatives each.
 * As vLLM lists them, the sampled token comes first, then the likeliest others, `top` in all
 * (vllm/entrypoints/openai/serving_chat.py, _get_top_logprobs over the sampled-first dict).
 */
export function chatLogprobs(
  tokenizer: TokenNamer,
  tokens: readonly GeneratedToken[],
  top: number,
): ChatTokenLogprob[] {
  const entry = (tokenId: number, logprob: number) => {
    const token = tokenizer.tokenText(tokenId);
    return { token, logprob: finite(logprob), bytes: [...Buffer.from(token, "utf8")] };
  };
  return tokens.map(scoredToken).map((t) => ({
    ...entry(t.tokenId, t.logprob),
    top_logprobs: [t, ...(t.top ?? []).filter((alt) => alt.tokenId !== t.tokenId)]
      .slice(0, top)
      .map((alt) => entry(alt.tokenId, alt.logprob)),
  }));
}

export interface VllmLogprob {
  logprob: number;
  rank: number;
  decoded_token: string;
}

/**
 * Prompt logprobs as vLLM returns them: null for the first position, then for each prompt token a
 * dict from token id to {logprob, rank, decoded_token} holding the actual token and the top `top`.
 * `decoded_token` is always the text: vLLM's return_tokens_as_token_ids changes only `logprobs`.
 */
export function vllmPromptLogprobs(
  tokenizer: TokenNamer,
  prompt: PromptLogprobs,
  top: number,
): LazyList<Record<string, VllmLogprob> | null> {
  return new LazyList(prompt.length, (i) => {
    const position = prompt[i];
    if (position === null || position === undefined) return null;
    const dict: Record<string, VllmLogprob> = {};
    (position.top ?? []).slice(0, top).forEach((alt, rank) => {
      dict[alt.tokenId] = {
        logprob: finite(alt.logprob),
        rank: rank + 1,
        decoded_token: tokenizer.tokenText(alt.tokenId),
      };
    });
    dict[position.tokenId] = {
      logprob: finite(position.logprob),
      rank: position.rank,
      decoded_token: tokenizer.tokenText(position.tokenId),
    };
    return dict;
  });
}
