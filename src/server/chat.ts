import type { Context } from "hono";
import type { ChatMessage, GeneratedToken, PromptLogprobs } from "../engine/index.js";
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
import { chatLogprobs, vllmPromptLogprobs } from "./logprobs.js";
import { parseBody } from "./request-body.js";
import { type ChatRequestMessage, chatRequestSchema } from "./schemas.js";
import { eventStream } from "./sse.js";

/** Messages as the chat template takes them; text parts are joined with newlines, as vLLM does. */
export function templateMessages(messages: readonly ChatRequestMessage[]): ChatMessage[] {
  return messages.map((m) => ({
    role: m.role,
    content: typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text).join("\n"),
  }));
}

/** POST /v1/chat/completions. */
export async function chatCompletions(ctx: ServerContext, c: Context, arrival: number): Promise<Response> {
  const body = parseBody(await c.req.text(), chatRequestSchema);
  const model = requireModel(ctx, body.model);
  const { engine } = ctx;
  const tokenizer = engine.tokenizer;
  if (body.top_logprobs != null && !body.logprobs) {
    throw new ApiError(
      400,
      "`top_logprobs` needs `logprobs: true`; set it or leave top_logprobs out.",
      "invalid_value",
      "top_logprobs",
    );
  }
  const rendered = tokenizer.applyChatTemplate(templateMessages(body.messages), {
    addGenerationPrompt: body.add_generation_prompt ?? true,
  });
  const promptIds = tokenizer.encode(rendered, { addSpecialTokens: false });
  // Without a limit, generate up to the context length (and no more than the whole KV cache holds).
  const room = Math.min(engine.limits.maxModelLen, engine.stats().kvTokenCapacity) - promptIds.length;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? Math.max(0, room);
  const topLogprobs = body.logprobs ? (body.top_logprobs ?? 0) : undefined;
  const abort = new AbortController();
  const generation = new Generation(
    engine,
    {
      promptTokenIds: promptIds,
      maxTokens,
      sampling: samplingOf(body),
      ...(topLogprobs !== undefined ? { logprobs: topLogprobs } : {}),
      ...(body.prompt_logprobs != null ? { promptLogprobs: body.prompt_logprobs } : {}),
      stop: stopStringsOf(body.stop),
      ...(body.stop_token_ids ? { stopTokenIds: body.stop_token_ids } : {}),
      ...(body.ignore_eos ? { ignoreEos: true } : {}),
    },
    AbortSignal.any([c.req.raw.signal, abort.signal]),
    ctx.metrics,
    arrival,
  );
  const id = responseId("chatcmpl");
  const created = unixSeconds();
  const usage = () => ({
    prompt_tokens: generation.promptTokens,
    completion_tokens: generation.completionTokens,
    total_tokens: generation.promptTokens + generation.completionTokens,
  });
  const logprobsOf = (tokens: readonly GeneratedToken[]) =>
    topLogprobs === undefined ? null : { content: chatLogprobs(tokenizer, tokens, topLogprobs) };
  const promptLogprobsOf = (p: PromptLogprobs | undefined) =>
    body.prompt_logprobs != null && p ? vllmPromptLogprobs(tokenizer, p, body.prompt_logprobs) : null;

  if (body.stream) {
    const includeUsage = body.stream_options?.include_usage ?? false;
    const frame = (choice: Record<string, unknown>) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }],
      ...(includeUsage ? { usage: null } : {}),
    });
    return eventStream(c, abort, async (send) => {
      let first = true;
      for await (const chunk of generation) {
        if (first) {
          // The role comes first, on its own, as OpenAI sends it; vLLM adds prompt logprobs there.
          await send({
            ...frame({ delta: { role: "assistant", content: "" } }),
            ...(body.prompt_logprobs != null
              ? { prompt_logprobs: promptLogprobsOf(chunk.promptLogprobs) }
              : {}),
          });
          first = false;
        }
        const withLogprobs = topLogprobs !== undefined && chunk.tokens.length > 0;
        if (chunk.finishReason === null && chunk.text === "" && !withLogprobs) continue;
        await send(
          frame({
            delta: chunk.text === "" && chunk.finishReason !== null ? {} : { content: chunk.text },
            logprobs: withLogprobs ? logprobsOf(chunk.tokens) : null,
            finish_reason: chunk.finishReason,
            stop_reason: chunk.stopReason,
          }),
        );
      }
      if (includeUsage)
        await send({ id, object: "chat.completion.chunk", created, model, choices: [], usage: usage() });
    });
  }

  let text = "";
  const tokens: GeneratedToken[] = [];
  let promptLp: PromptLogprobs | undefined;
  let finishReason: string | null = null;
  let stopReason: string | number | null = null;
  for await (const chunk of generation) {
    text += chunk.text;
    tokens.push(...chunk.tokens);
    promptLp ??= chunk.promptLogprobs;
    finishReason = chunk.finishReason;
    stopReason = chunk.stopReason;
  }
  return c.json({
    id,
    object: "chat.completion",
    created,
    model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: text },
        logprobs: logprobsOf(tokens),
        finish_reason: finishReason,
        stop_reason: stopReason,
      },
    ],
    usage: usage(),
    prompt_logprobs: promptLogprobsOf(promptLp),
  });
}
