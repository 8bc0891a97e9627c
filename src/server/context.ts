import { randomUUID } from "node:crypto";
import type { SamplingParams, TextTokenizer } from "../engine/index.js";
import { ApiError } from "./api-error.js";
import type { ServerMetrics } from "./metrics.js";
import type { RequestLog } from "./request-log.js";
import type { RequestTemplateRenderer } from "./request-template.js";
import type { ServedEngine } from "./served-engine.js";

/** What every route needs: the engine, the metrics, and the name the model is served under. */
export interface ServerContext {
  readonly engine: ServedEngine;
  readonly metrics: ServerMetrics;
  readonly modelName: string;
  /** Unix seconds when the server started (the `created` of /v1/models). */
  readonly startedAt: number;
  /** Aborted when the server's drain time is up: requests still running end with an error. */
  readonly shutdown: AbortSignal;
  readonly log: RequestLog;
  /** Most bytes of any request body (serve's hard cap; routes also hold a body to its prompts). */
  readonly maxRequestBodyBytes: number;
  /** Renders requests' own chat templates; absent unless serve trusts them (--trust-request-chat-template). */
  readonly templates?: RequestTemplateRenderer;
}

/** Checks the request's `model` (absent means the served model, as in vLLM) and returns the name to report. */
export function requireModel(ctx: ServerContext, model: string | null | undefined): string {
  if (model === undefined || model === null || model === ctx.modelName) return ctx.modelName;
  throw new ApiError(
    404,
    `The model \`${model}\` does not exist; this server serves \`${ctx.modelName}\` (see GET /v1/models).`,
    "model_not_found",
    "model",
  );
}

interface SamplingFields {
  readonly temperature?: number | null;
  readonly top_p?: number | null;
  readonly top_k?: number | null;
  readonly min_p?: number | null;
  readonly seed?: number | bigint | null;
  readonly presence_penalty?: number | null;
  readonly frequency_penalty?: number | null;
  readonly repetition_penalty?: number | null;
  readonly logit_bias?: Readonly<Record<string, number>> | null;
  readonly allowed_token_ids?: readonly number[] | null;
  readonly bad_words?: readonly string[] | null;
}

/** Token sequences of bad words, as vLLM makes them: each word alone and after a space. */
function badWordIds(tokenizer: TextTokenizer, words: readonly string[]): number[][] {
  const out: number[][] = [];
  for (const word of words) {
    for (const text of [word, ` ${word.trimStart()}`]) {
      const ids = tokenizer.encode(text, { addSpecialTokens: false });
      if (ids.length > 0 && !out.some((o) => o.join() === ids.join())) out.push(ids);
    }
  }
  return out;
}

/**
 * OpenAI's and vLLM's sampling fields as the engine's; the engine checks their ranges. A
 * logit_bias id outside the vocabulary is refused, as vLLM's processor does
 * (vllm/v1/engine/processor.py, _validate_logit_bias).
 */
export function samplingOf(
  body: SamplingFields,
  engine: Pick<ServedEngine, "tokenizer" | "vocabSize">,
): SamplingParams {
  const { tokenizer, vocabSize } = engine;
  const bias = body.logit_bias ?? {};
  const biasEntries = Object.entries(bias).map(([id, v]) => {
    const tokenId = Number(id);
    if (!/^\d+$/.test(id.trim()) || !Number.isSafeInteger(tokenId))
      throw new ApiError(400, `\`logit_bias\`: "${id}" is not a token id.`, "invalid_value", "logit_bias");
    if (tokenId >= vocabSize)
      throw new ApiError(
        400,
        `\`logit_bias\`: token id ${tokenId} is out of the vocabulary (size ${vocabSize}); bias ids 0..${vocabSize - 1}.`,
        "invalid_value",
        "logit_bias",
      );
    if (!(v >= -100 && v <= 100))
      throw new ApiError(400, "`logit_bias`: biases must be in [-100, 100].", "invalid_value", "logit_bias");
    return [tokenId, v] as const;
  });
  return {
    ...(body.temperature != null ? { temperature: body.temperature } : {}),
    ...(body.top_p != null ? { topP: body.top_p } : {}),
    ...(body.top_k != null ? { topK: body.top_k } : {}),
    ...(body.min_p != null ? { minP: body.min_p } : {}),
    ...(body.seed != null ? { seed: body.seed } : {}),
    ...(body.presence_penalty != null ? { presencePenalty: body.presence_penalty } : {}),
    ...(body.frequency_penalty != null ? { frequencyPenalty: body.frequency_penalty } : {}),
    ...(body.repetition_penalty != null ? { repetitionPenalty: body.repetition_penalty } : {}),
    ...(biasEntries.length > 0 ? { logitBias: new Map(biasEntries) } : {}),
    ...(body.allowed_token_ids != null ? { allowedTokenIds: body.allowed_token_ids } : {}),
    ...(body.bad_words != null && body.bad_words.length > 0
      ? { badWords: badWordIds(tokenizer, body.bad_words) }
      : {}),
  };
}

/** `stop` as a list; an empty stop string would end every request at once, so it is refused. */
export function stopStringsOf(stop: string | readonly string[] | null | undefined): string[] {
  const list = stop == null ? [] : typeof stop === "string" ? [stop] : [...stop];
  if (list.some((s) => s.length === 0)) {
    throw new ApiError(
      400,
      "`stop`: stop strings must not be empty; remove the empty string.",
      "invalid_value",
      "stop",
    );
  }
  return list;
}

/** A request id: the client's `request_id` or X-Request-Id when given, else a fresh one. */
export function newRequestId(): string {
  return randomUUID().replaceAll("-", "");
}

export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
