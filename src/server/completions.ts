import type { Context } from "hono";
import { type GeneratedToken, type PromptLogprobs, scoredToken } from "../engine/index.js";
import { ApiError } from "./api-error.js";
import { bestChoices, type Choice, choiceCounts, engineLogprobs, startChoices, usageOf } from "./choices.js";
import { requireModel, type ServerContext, samplingOf, stopStringsOf, unixSeconds } from "./context.js";
import { jsonResponse } from "./json-stream.js";
import {
  appendCompletionLogprobs,
  type CompletionLogprobs,
  completionLogprobs,
  type PositionLogprob,
  tokenNamer,
  vllmPromptLogprobs,
} from "./logprobs.js";
import { checkBodySize, promptTokenIds } from "./prompt-limits.js";
import { parseBody, readBodyText } from "./request-body.js";
import type { RequestRecord } from "./request-log.js";
import { type CompletionRequest, completionRequestSchema } from "./schemas.js";
import { eventStream, requireStreamForOptions } from "./sse.js";

/** vLLM's and OpenAI's default for the legacy completions API. */
const DEFAULT_MAX_TOKENS = 16;

/** The request's prompts: one text or token list, or a list of either. */
function promptsOf(prompt: CompletionRequest["prompt"]): (string | number[])[] {
  if (typeof prompt === "string") return [prompt];
  if (prompt.length > 0 && prompt.every((p) => typeof p === "number")) return [prompt as number[]];
  if (prompt.length === 0)
    throw new ApiError(400, "`prompt`: send at least one prompt.", "invalid_prompt", "prompt");
  return prompt as (string | number[])[];
}

/** The echoed prompt's positions: the first has no logprob, the rest come from the prompt logprobs. */
function promptPositions(ids: readonly number[], prompt: PromptLogprobs): PositionLogprob[] {
  return ids.map((tokenId, i) => ({ tokenId, scored: i === 0 ? null : (prompt[i] ?? null) }));
}

function tokenPositions(tokens: readonly GeneratedToken[]): PositionLogprob[] {
  return tokens.map((t) => ({ tokenId: t.tokenId, scored: scoredToken(t) }));
}

/** POST /v1/completions. */
export async function completions(ctx: ServerContext, c: Context, record: RequestRecord): Promise<Response> {
  const text = await readBodyText(c.req.raw, ctx.maxRequestBodyBytes);
  const body = parseBody(text, completionRequestSchema);
  const model = requireModel(ctx, body.model);
  requireStreamForOptions(body);
  if (body.request_id != null) record.requestId = body.request_id;
  const tokenizer = ctx.engine.tokenizer;
  const names = tokenNamer(tokenizer, body.return_tokens_as_token_ids ?? false);
  const stream = body.stream ?? false;
  const { n, bestOf } = choiceCounts(body, stream);
  const prompts = promptsOf(body.prompt);
  checkBodySize(ctx, Buffer.byteLength(text), prompts.length);
  const promptIds = prompts.map((p) =>
    promptTokenIds(ctx, p, body.add_special_tokens ?? true, body.truncate_prompt_tokens ?? undefined),
  );
  const echo = body.echo ?? false;
  const logprobs = body.logprobs ?? undefined;
  // Echo with logprobs scores the prompt too, so the engine is asked for enough prompt alternatives for both uses.
  const wantPrompt = Math.max(body.prompt_logprobs ?? -1, echo && logprobs !== undefined ? logprobs : -1);
  // vLLM answers prompt_logprobs for echo + logprobs too, with `logprobs` alternatives
  // (vllm/entrypoints/openai/protocol.py, CompletionRequest.to_sampling_params).
  const answerPrompt = body.prompt_logprobs ?? (echo ? logprobs : undefined);
  const tokenLogprobs = engineLogprobs(logprobs, n, bestOf);
  const abort = new AbortController();
  const choices = await startChoices(
    ctx,
    promptIds,
    {
      maxTokens: body.max_tokens ?? DEFAULT_MAX_TOKENS,
      sampling: samplingOf(body, ctx.engine),
      ...(tokenLogprobs !== undefined ? { logprobs: tokenLogprobs } : {}),
      ...(wantPrompt >= 0 ? { promptLogprobs: wantPrompt } : {}),
      stop: stopStringsOf(body.stop),
      ...(body.include_stop_str_in_output ? { includeStopString: true } : {}),
      ...(body.stop_token_ids ? { stopTokenIds: body.stop_token_ids } : {}),
      ...(body.ignore_eos ? { ignoreEos: true } : {}),
      ...(body.min_tokens ? { minTokens: body.min_tokens } : {}),
    },
    bestOf,
    AbortSignal.any([c.req.raw.signal, abort.signal]),
    record,
    // A stream blocked writing to a client that stopped reading ends here (see eventStream).
    (error) => abort.abort(error),
  );
  const echoText = (p: number) => {
    if (!echo) return "";
    const prompt = prompts[p] as string | number[];
    return typeof prompt === "string" ? prompt : tokenizer.decode(prompt);
  };
  const id = `cmpl-${record.requestId}`;
  const created = unixSeconds();
  const promptTokens = record.promptTokens ?? 0;
  const usage = () => usageOf(choices, promptTokens);
  const promptLogprobsField = (promptLp: PromptLogprobs | undefined) =>
    answerPrompt !== undefined && promptLp ? vllmPromptLogprobs(tokenizer, promptLp, answerPrompt) : null;
  const finished = () => {
    record.completionTokens = usage().completion_tokens;
    record.finishReasons = choices.map((ch) => ch.generation.finishReason ?? "abort");
  };

  if (stream) {
    const includeUsage = body.stream_options?.include_usage ?? false;
    const continuous = includeUsage && (body.stream_options?.continuous_usage_stats ?? false);
    record.deferred = true;
    return eventStream(c, abort, ctx, record, async (send) => {
      const runOne = async ({ index, prompt, generation }: Choice) => {
        let first = true;
        let offset = 0;
        for await (const chunk of generation) {
          const text = (first ? echoText(prompt) : "") + chunk.text;
          let lp: CompletionLogprobs | null = null;
          if (logprobs !== undefined) {
            const positions = tokenPositions(chunk.tokens);
            if (first && echo)
              positions.unshift(...promptPositions(promptIds[prompt] ?? [], chunk.promptLogprobs ?? []));
            const shaped = completionLogprobs(names, positions, logprobs, offset);
            offset = shaped.end;
            lp = shaped.logprobs;
          }
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
                index,
                text,
                logprobs: lp,
                finish_reason: chunk.finishReason,
                stop_reason: chunk.stopReason,
                ...(first && answerPrompt !== undefined
                  ? { prompt_logprobs: promptLogprobsField(chunk.promptLogprobs) }
                  : {}),
              },
            ],
            ...(includeUsage ? { usage: continuous ? usage() : null } : {}),
          });
          first = false;
        }
      };
      try {
        await Promise.all(choices.map(runOne));
      } finally {
        finished();
      }
      if (includeUsage)
        await send({ id, object: "text_completion", created, model, choices: [], usage: usage() });
    });
  }

  const runOne = async (choice: Choice) => {
    let text = echoText(choice.prompt);
    let lp: CompletionLogprobs | null = null;
    let promptLp: PromptLogprobs | undefined;
    let finishReason: string | null = null;
    let stopReason: string | number | null = null;
    let first = true;
    let offset = 0;
    for await (const chunk of choice.generation) {
      text += chunk.text;
      if (logprobs !== undefined) {
        const positions = tokenPositions(chunk.tokens);
        if (first && echo)
          positions.unshift(...promptPositions(promptIds[choice.prompt] ?? [], chunk.promptLogprobs ?? []));
        const shaped = completionLogprobs(names, positions, logprobs, offset);
        offset = shaped.end;
        if (lp) appendCompletionLogprobs(lp, shaped.logprobs);
        else lp = shaped.logprobs;
      }
      promptLp ??= chunk.promptLogprobs;
      finishReason = chunk.finishReason;
      stopReason = chunk.stopReason;
      first = false;
    }
    return { choice, text, lp, promptLp, finishReason, stopReason };
  };
  const done = await Promise.all(choices.map(runOne))
    .catch((error: unknown) => {
      abort.abort();
      throw error;
    })
    .finally(finished);
  return jsonResponse(c, {
    id,
    object: "text_completion",
    created,
    model,
    choices: bestChoices(done, n, bestOf).map((d, i) => ({
      index: i,
      text: d.text,
      logprobs: d.lp,
      finish_reason: d.finishReason,
      stop_reason: d.stopReason,
      prompt_logprobs: promptLogprobsField(d.promptLp),
    })),
    usage: usage(),
  });
}
