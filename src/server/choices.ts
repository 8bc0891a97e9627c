import { BringupError } from "../common/errors.js";
import { ApiError } from "./api-error.js";
import type { ServerContext } from "./context.js";
import { Generation, type GenerationParams } from "./generation.js";
import type { RequestRecord } from "./request-log.js";

/** One choice's generation and the index it answers under. */
export interface Choice {
  readonly index: number;
  readonly prompt: number;
  readonly generation: Generation;
}

/** `n` and `best_of` as vLLM checks them. */
export function choiceCounts(
  body: { n?: number | null; best_of?: number | null },
  stream: boolean,
): { n: number; bestOf: number } {
  const n = body.n ?? 1;
  const bestOf = body.best_of ?? n;
  if (bestOf < n)
    throw new ApiError(
      400,
      `\`best_of\` (${bestOf}) must be at least \`n\` (${n}).`,
      "invalid_value",
      "best_of",
    );
  if (stream && bestOf > n)
    throw new ApiError(
      400,
      "`best_of` above `n` cannot stream (the best are known only at the end); drop stream or best_of.",
      "invalid_value",
      "best_of",
    );
  return { n, bestOf };
}

/**
 * The generated-token logprobs to ask the engine for: the `asked` alternatives, and at least each
 * token's own where best_of keeps the n choices of highest cumulative logprob (the engine computes
 * none unasked).
 */
export function engineLogprobs(asked: number | undefined, n: number, bestOf: number): number | undefined {
  return bestOf > n ? (asked ?? 0) : asked;
}

/** The i-th sequence's seed: distinct and reproducible for a seeded request. */
function seedOf(seed: number | bigint | undefined, i: number): number | bigint | undefined {
  if (seed === undefined || i === 0) return seed;
  return BigInt.asIntN(64, BigInt(seed) + BigInt(i));
}

/**
 * Starts `bestOf` sequences for each prompt (all accepted, or none: a refusal aborts the rest).
 * A prompt's sequences share its prefill: the engine computes it once and copies its KV.
 */
export async function startChoices(
  ctx: ServerContext,
  prompts: readonly (readonly number[])[],
  params: Omit<GenerationParams, "promptTokenIds">,
  bestOf: number,
  signal: AbortSignal,
  record: RequestRecord,
  /** Hears at once of a choice whose reader fell too far behind (see Generation.start). */
  onTooSlow?: (error: unknown) => void,
): Promise<Choice[]> {
  const abort = new AbortController();
  const both = AbortSignal.any([signal, abort.signal]);
  const seeds = Array.from({ length: bestOf }, (_, i) => seedOf(params.sampling?.seed, i));
  const started = prompts.map((promptTokenIds, p) =>
    Generation.start(ctx, { ...params, promptTokenIds }, seeds, both, record.arrival, onTooSlow).then(
      (generations) => generations.map((generation, i) => ({ index: p * bestOf + i, prompt: p, generation })),
    ),
  );
  const settled = await Promise.allSettled(started);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed !== undefined) {
    abort.abort();
    throw failed.reason;
  }
  const choices = settled.flatMap((s) => (s as PromiseFulfilledResult<Choice[]>).value);
  record.promptTokens = prompts.reduce((sum, p) => sum + p.length, 0);
  return choices;
}

/** After the choices ran: keeps the n with the highest cumulative logprob per prompt, renumbered. */
export function bestChoices<T extends { choice: Choice }>(
  done: readonly T[],
  n: number,
  bestOf: number,
): T[] {
  if (bestOf === n) return [...done];
  const byPrompt = new Map<number, T[]>();
  for (const d of done) byPrompt.set(d.choice.prompt, [...(byPrompt.get(d.choice.prompt) ?? []), d]);
  return [...byPrompt.values()].flatMap((list) =>
    [...list].sort((a, b) => rankingLogprob(b.choice) - rankingLogprob(a.choice)).slice(0, n),
  );
}

/** `choice`'s cumulative logprob, which its request had to ask for (see engineLogprobs). */
function rankingLogprob(choice: Choice): number {
  const sum = choice.generation.cumulativeLogprob;
  if (sum === undefined)
    throw new BringupError(
      "LOGPROB_NOT_COMPUTED",
      `choice ${choice.index} has no cumulative logprob to rank by: best_of above n must ask for logprobs.`,
    );
  return sum;
}

/** Usage over every sequence run (best_of counts the ones not returned too, as vLLM bills them). */
export function usageOf(choices: readonly Choice[], promptTokens: number) {
  const completion = choices.reduce((s, c) => s + c.generation.completionTokens, 0);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
  };
}
