import type { Context } from "hono";
import type { ChatMessage, GeneratedToken, PromptLogprobs } from "../engine/index.js";
import { ApiError } from "./api-error.js";
import { bestChoices, type Choice, choiceCounts, engineLogprobs, startChoices, usageOf } from "./choices.js";
import { requireModel, type ServerContext, samplingOf, stopStringsOf, unixSeconds } from "./context.js";
import { jsonResponse } from "./json-stream.js";
import { chatLogprobs, tokenNamer, vllmPromptLogprobs } from "./logprobs.js";
import {
  bodyBytesPerPrompt,
  checkBodySize,
  checkMessageCount,
  checkTextLength,
  maxPromptChars,
} from "./prompt-limits.js";
import { parseBody, readBodyText } from "./request-body.js";
import type { RequestRecord } from "./request-log.js";
import { type ChatRequestMessage, chatRequestSchema } from "./schemas.js";
import { eventStream, requireStreamForOptions } from "./sse.js";

/** Messages as the chat template takes them; text parts are joined with newlines, as vLLM does. */
export function templateMessages(messages: readonly ChatRequestMessage[]): ChatMessage[] {
  return messages.map((m) => ({
    role: m.role,
    content: typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text).join("\n"),
  }));
}

/**
 * A chat's prompt token ids, with its length checked before the template runs and before
 * tokenizing. The model's template renders here; a request's own (`template`) only when serve
 * trusts request templates, and then on their thread under its budget (vLLM refuses them unless
 * started with --trust-request-chat-template: vllm/entrypoints/openai/serving_engine.py).
 */
export async function chatPromptIds(
  ctx: ServerContext,
  messages: readonly ChatRequestMessage[],
  addGenerationPrompt: boolean,
  addSpecialTokens: boolean,
  /** Refuse a rendered chat longer than max_model_len tokens could be (not on /tokenize, which counts). */
  checkLength: boolean,
  /** The request's own chat template, instead of the model's. */
  template?: string,
): Promise<number[]> {
  checkMessageCount(ctx, messages.length);
  const { tokenizer } = ctx.engine;
  let rendered: string;
  if (template === undefined)
    rendered = tokenizer.applyChatTemplate(templateMessages(messages), { addGenerationPrompt });
  else if (ctx.templates === undefined)
    throw new ApiError(
      400,
      "the request has its own `chat_template`, but this server does not run request templates (they are the client's code); leave it out to use the model's, or start serve with --trust-request-chat-template.",
      "chat_template_not_trusted",
      "chat_template",
    );
  else
    rendered = await ctx.templates.render(
      template,
      tokenizer.chatTemplateContext(templateMessages(messages), addGenerationPrompt),
      // Past this the text is refused on the template's thread; /tokenize takes what a body could.
      checkLength ? maxPromptChars(ctx) : bodyBytesPerPrompt(ctx),
    );
  if (checkLength) checkTextLength(ctx, rendered, "messages");
  // The template writes the special tokens itself, so none are added by default (vLLM's rule).
  return tokenizer.encode(rendered, { addSpecialTokens });
}

/** POST /v1/chat/completions. */
export async function chatCompletions(
  ctx: ServerContext,
  c: Context,
  record: RequestRecord,
): Promise<Response> {
  const text = await readBodyText(c.req.raw, ctx.maxRequestBodyBytes);
  const body = parseBody(text, chatRequestSchema);
  checkBodySize(ctx, Buffer.byteLength(text), 1);
  const model = requireModel(ctx, body.model);
  requireStreamForOptions(body);
  if (body.request_id != null) record.requestId = body.request_id;
  const { engine } = ctx;
  const tokenizer = engine.tokenizer;
  const names = tokenNamer(tokenizer, body.return_tokens_as_token_ids ?? false);
  if (body.top_logprobs != null && !body.logprobs) {
    throw new ApiError(
      400,
      "`top_logprobs` needs `logprobs: true`; set it or leave top_logprobs out.",
      "invalid_value",
      "top_logprobs",
    );
  }
  const stream = body.stream ?? false;
  const { n, bestOf } = choiceCounts(body, stream);
  const addGenerationPrompt = body.add_generation_prompt ?? true;
  let promptIds = await chatPromptIds(
    ctx,
    body.messages,
    addGenerationPrompt,
    body.add_special_tokens ?? false,
    true,
    body.chat_template ?? undefined,
  );
  // vLLM's role: the assistant's, or without a generation prompt the last message's (continued).
  const lastMessage = templateMessages(body.messages.slice(-1))[0] as ChatMessage;
  const role = addGenerationPrompt ? "assistant" : lastMessage.role;
  // vLLM's echo: the last message's content comes first when it is in the answer's role.
  const echoed = body.echo && lastMessage.role === role ? lastMessage.content : "";
  if (body.truncate_prompt_tokens != null) promptIds = promptIds.slice(-body.truncate_prompt_tokens);
  // Without a limit, generate up to the context length (and no more than the whole KV cache holds).
  const room = Math.min(engine.limits.maxModelLen, engine.limits.kvTokenCapacity) - promptIds.length;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? Math.max(0, room);
  const topLogprobs = body.logprobs ? (body.top_logprobs ?? 0) : undefined;
  // vLLM's echo asks for prompt logprobs too, with top_logprobs (default 0) alternatives
  // (vllm/entrypoints/openai/protocol.py, ChatCompletionRequest.to_sampling_params); a stream
  // sends them only when asked by name.
  const promptLogprobs =
    body.prompt_logprobs ?? (body.echo && !stream ? (body.top_logprobs ?? 0) : undefined);
  const tokenLogprobs = engineLogprobs(topLogprobs, n, bestOf);
  const abort = new AbortController();
  const choices = await startChoices(
    ctx,
    [promptIds],
    {
      maxTokens,
      sampling: samplingOf(body, ctx.engine),
      ...(tokenLogprobs !== undefined ? { logprobs: tokenLogprobs } : {}),
      ...(promptLogprobs != null ? { promptLogprobs } : {}),
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
  const id = `chatcmpl-${record.requestId}`;
  const created = unixSeconds();
  const usage = () => usageOf(choices, promptIds.length);
  const logprobsOf = (tokens: readonly GeneratedToken[]) =>
    topLogprobs === undefined ? null : { content: chatLogprobs(names, tokens, topLogprobs) };
  const promptLogprobsOf = (p: PromptLogprobs | undefined) =>
    promptLogprobs != null && p ? vllmPromptLogprobs(tokenizer, p, promptLogprobs) : null;
  const finished = () => {
    record.completionTokens = usage().completion_tokens;
    record.finishReasons = choices.map((ch) => ch.generation.finishReason ?? "abort");
  };

  if (stream) {
    const includeUsage = body.stream_options?.include_usage ?? false;
    const continuous = includeUsage && (body.stream_options?.continuous_usage_stats ?? false);
    const frame = (index: number, choice: Record<string, unknown>) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index, logprobs: null, finish_reason: null, ...choice }],
      ...(includeUsage ? { usage: continuous ? usage() : null } : {}),
    });
    record.deferred = true;
    return eventStream(c, abort, ctx, record, async (send) => {
      const runOne = async ({ index, generation }: Choice) => {
        let first = true;
        for await (const chunk of generation) {
          if (first) {
            // The role comes first, on its own, as OpenAI sends it; vLLM adds prompt logprobs there.
            await send({
              ...frame(index, { delta: { role, content: "" } }),
              ...(body.prompt_logprobs != null
                ? { prompt_logprobs: promptLogprobsOf(chunk.promptLogprobs) }
                : {}),
            });
            if (echoed !== "") await send(frame(index, { delta: { content: echoed } }));
            first = false;
          }
          const withLogprobs = topLogprobs !== undefined && chunk.tokens.length > 0;
          if (chunk.finishReason === null && chunk.text === "" && !withLogprobs) continue;
          await send(
            frame(index, {
              delta: chunk.text === "" && chunk.finishReason !== null ? {} : { content: chunk.text },
              logprobs: withLogprobs ? logprobsOf(chunk.tokens) : null,
              finish_reason: chunk.finishReason,
              stop_reason: chunk.stopReason,
            }),
          );
        }
      };
      try {
        await Promise.all(choices.map(runOne));
      } finally {
        finished();
      }
      if (includeUsage)
        await send({ id, object: "chat.completion.chunk", created, model, choices: [], usage: usage() });
    });
  }

  const runOne = async (choice: Choice) => {
    let text = "";
    const tokens: GeneratedToken[] = [];
    let promptLp: PromptLogprobs | undefined;
    let finishReason: string | null = null;
    let stopReason: string | number | null = null;
    for await (const chunk of choice.generation) {
      text += chunk.text;
      tokens.push(...chunk.tokens);
      promptLp ??= chunk.promptLogprobs;
      finishReason = chunk.finishReason;
      stopReason = chunk.stopReason;
    }
    return { choice, text, tokens, promptLp, finishReason, stopReason };
  };
  const done = await Promise.all(choices.map(runOne))
    .catch((error: unknown) => {
      abort.abort();
      throw error;
    })
    .finally(finished);
  const best = bestChoices(done, n, bestOf);
  return jsonResponse(c, {
    id,
    object: "chat.completion",
    created,
    model,
    choices: best.map((d, i) => ({
      index: i,
      message: { role, content: echoed + d.text },
      logprobs: logprobsOf(d.tokens),
      finish_reason: d.finishReason,
      stop_reason: d.stopReason,
    })),
    usage: usage(),
    prompt_logprobs: promptLogprobsOf(best[0]?.promptLp),
  });
}
