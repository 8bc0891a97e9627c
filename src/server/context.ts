import { randomUUID } from "node:crypto";
import type { Engine, SamplingParams } from "../engine/index.js";
import { ApiError } from "./api-error.js";
import type { ServerMetrics } from "./metrics.js";

/** What every route needs: the engine, the metrics, and the name the model is served under. */
export interface ServerContext {
  readonly engine: Engine;
  readonly metrics: ServerMetrics;
  readonly modelName: string;
  /** Unix seconds when the server started (the `created` of /v1/models). */
  readonly startedAt: number;
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
  readonly seed?: number | null;
}

/** OpenAI's sampling fields as the engine's; the engine checks their ranges. */
export function samplingOf(body: SamplingFields): SamplingParams {
  return {
    ...(body.temperature != null ? { temperature: body.temperature } : {}),
    ...(body.top_p != null ? { topP: body.top_p } : {}),
    ...(body.top_k != null ? { topK: body.top_k } : {}),
    ...(body.seed != null ? { seed: body.seed } : {}),
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

/** An id in OpenAI's style, e.g. `cmpl-…` or `chatcmpl-…`. */
export function responseId(prefix: string): string {
  return `${prefix}-${randomUUID().replaceAll("-", "")}`;
}

export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
