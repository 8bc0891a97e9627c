import type { Context } from "hono";
import type { GeneratedToken, PromptLogprobs } from "../engine/index.js";
import { ApiError } from "./api-error.js";
import {
  requireModel,
  responseId,
  type ServerContext,
  samplingOf,
  stopStringsOf,
  unixSeconds,
} from "./context.js";
import { Generation } from "./generation.js";
import {
  appendCompletionLogprobs,
  type CompletionLogprobs,
  completionLogprobs,
  type PositionLogprob,
  vllmPromptLogprobs,
} from "./logprobs.js";
import { parseBody } from "./request-body.js";
import { type CompletionRequest, completionRequestSchema } from "./schemas.js";
import { eventStream } from "./sse.js";

/** vLLM's and OpenAI's default for the legacy completions API. */
const DEFAULT_MAX_TOKENS = 16;

/** The one prompt of a request, as text (when given as text) or token ids. */
function singlePrompt(prompt: CompletionRequest["prompt"]): string | number[] {
  if (typeof prompt === "string") return prompt;
  if (prompt.every((p) => typeof p === "number")) return prompt as number[];
  if (prompt.length !== 1) {
    throw new ApiError(
      400,
      `\`prompt\`: this server takes one prompt per request, got ${prompt.length}; send them as separate requests.`,
      "invalid_value",
      "prompt",
    );
  }
  return prompt[0] as string | number[];
}

/** The echoed prompt's positions: the first has no logprob, the rest come from the prompt logprobs. */
function promptPositions(ids: readonly number[], prompt: PromptLogprobs): PositionLogprob[] {
  return ids.map((tokenId, i) => ({ tokenId, scored: i === 0 ? null : (prompt[i] ?? null) }));
}

function tokenPositions(tokens: readonly GeneratedToken[]): PositionLogprob[] {
  return tokens.map((t) => ({ tokenId: t.tokenId, scored: t }));
}

/** POST /v1/completions. */
export async function completions(ctx: ServerContext, c: Context, arrival: number): Promise<Response> {
  const body = parseBody(await c.req.text(), completionRequestSchema);
  const model = requireModel(ctx, body.model);
  const tokenizer = ctx.engine.tokenizer;
  const prompt = singlePrompt(body.prompt);
  const promptIds = typeof prompt === "string" ? tokenizer.encode(prompt) : prompt;
  const echo = body.echo ?? false;
  const logprobs = body.logprobs ?? undefined;
  // Echo with logprobs scores the prompt too, so the engine is asked for enough prompt alternatives for both uses.
  const wantPrompt = Math.max(body.prompt_logprobs ?? -1, echo && logprobs !== undefined ? logprobs : -1);
  const abort = new AbortController();
  const generation = new Generation(
    ctx.engine,
    {
      promptTokenIds: promptIds,
      maxTokens: body.max_tokens ?? DEFAULT_MAX_TOKENS,
      sampling: samplingOf(body),
      ...(logprobs !== undefined ? { logprobs } : {}),
      ...(wantPrompt >= 0 ? { promptLogprobs: wantPrompt } : {}),
      stop: stopStringsOf(body.stop),
      ...(body.stop_token_ids ? { stopTokenIds: body.stop_token_ids } : {}),
      ...(body.ignore_eos ? { ignoreEos: true } : {}),
    },
    AbortSignal.any([c.req.raw.signal, abort.signal]),
    ctx.metrics,
    arrival,
  );
  const echoText = echo ? (typeof prompt === "string" ? prompt : tokenizer.decode(prompt)) : "";
  const id = responseId("cmpl");
  const created = unixSeconds();
  const usage = () => ({
    prompt_tokens: generation.promptTokens,
    completion_tokens: generation.completionTokens,
    total_tokens: generation.promptTokens + generation.completionTokens,
  });
  let offset = 0;
  /** The logprobs of one chunk (echoed prompt positions first, on the first chunk). */
  const chunkLogprobs = (
    tokens: readonly GeneratedToken[],
    promptLp: PromptLogprobs | undefined,
    first: boolean,
  ) => {
    if (logprobs === undefined) return null;
    const positions = tokenPositions(tokens);
    if (first && echo) positions.unshift(...promptPositions(promptIds, promptLp ?? []));
    const shaped = completionLogprobs(tokenizer, positions, logprobs, offset);
    offset = shaped.end;
    return shaped.logprobs;
  };
  const promptLogprobsField = (promptLp: PromptLogprobs | undefined) =>
    body.prompt_logprobs != null && promptLp
      ? vllmPromptLogprobs(tokenizer, promptLp, body.prompt_logprobs)
      : null;

  if (body.stream) {
    const includeUsage = body.stream_options?.include_usage ?? false;
    return eventStream(c, abort, async (send) => {
      let first = true;
      for await (const chunk of generation) {
        const text = (first ? echoText : "") + chunk.text;
        const lp = chunkLogprobs(chunk.tokens, chunk.promptLogprobs, first);
        // A step whose text is still held back is sent only when it carries logprobs.
        if (
          !first &&
          chunk.finishReason === null &&
          text === "" &&
          (lp === null || chunk.tokens.length === 0)
        )
          continue;
        await send({
          id,
          object: "text_completion",
          created,
          model,
          choices: [
            {
              index: 0,
              text,
              logprobs: lp,
              finish_reason: chunk.finishReason,
              stop_reason: chunk.stopReason,
              ...(first && body.prompt_logprobs != null
                ? { prompt_logprobs: promptLogprobsField(chunk.promptLogprobs) }
                : {}),
            },
          ],
          ...(includeUsage ? { usage: null } : {}),
        });
        first = false;
      }
      if (includeUsage)
        await send({ id, object: "text_completion", created, model, choices: [], usage: usage() });
    });
  }

  let text = echoText;
  let lp: CompletionLogprobs | null = null;
  let promptLp: PromptLogprobs | undefined;
  let finishReason: string | null = null;
  let stopReason: string | number | null = null;
  let first = true;
  for await (const chunk of generation) {
    text += chunk.text;
    const more = chunkLogprobs(chunk.tokens, chunk.promptLogprobs, first);
    if (more) {
      if (lp) appendCompletionLogprobs(lp, more);
      else lp = more;
    }
    promptLp ??= chunk.promptLogprobs;
    finishReason = chunk.finishReason;
    stopReason = chunk.stopReason;
    first = false;
  }
  return c.json({
    id,
    object: "text_completion",
    created,
    model,
    choices: [
      {
        index: 0,
        text,
        logprobs: lp,
        finish_reason: finishReason,
        stop_reason: stopReason,
        prompt_logprobs: promptLogprobsField(promptLp),
      },
    ],
    usage: usage(),
  });
}
