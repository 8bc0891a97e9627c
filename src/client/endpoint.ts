import { z } from "zod";
import { BringupError } from "../common/errors.js";
import { type RequestOptions, requestJson, requestText } from "./http.js";

const ModelsResponse = z.looseObject({
  data: z.array(z.looseObject({ id: z.string().min(1), max_model_len: z.int().positive().nullish() })).min(1),
});

const VersionResponse = z.looseObject({ version: z.string().min(1), server: z.string().optional() });

const TokenizeResponse = z.looseObject({ tokens: z.array(z.int().nonnegative()), count: z.int().optional() });

const PromptLogprobEntry = z.record(
  z.string(),
  z.looseObject({ logprob: z.number(), rank: z.number().nullish(), decoded_token: z.string().nullish() }),
);

const CompletionChoice = z.looseObject({
  text: z.string(),
  finish_reason: z.string().nullish(),
  logprobs: z
    .looseObject({
      tokens: z.array(z.string()),
      token_logprobs: z.array(z.number().nullable()),
      top_logprobs: z.array(z.record(z.string(), z.number()).nullable()).nullish(),
    })
    .nullish(),
  prompt_logprobs: z.array(PromptLogprobEntry.nullable()).nullish(),
});

export const CompletionResponse = z.looseObject({
  choices: z.array(CompletionChoice).min(1),
  usage: z.looseObject({ prompt_tokens: z.int().nonnegative() }).nullish(),
});
export type CompletionResponse = z.infer<typeof CompletionResponse>;
export type CompletionChoice = z.infer<typeof CompletionChoice>;

/** The body of a /v1/completions request; `model` is filled in by the endpoint. */
export interface CompletionRequest {
  readonly prompt: string | readonly number[];
  readonly max_tokens: number;
  readonly temperature?: number;
  readonly top_p?: number;
  readonly seed?: number;
  readonly logprobs?: number;
  readonly echo?: boolean;
  readonly prompt_logprobs?: number;
  readonly ignore_eos?: boolean;
  /** vLLM's extension: logprobs name tokens as `token_id:N` rather than by their text. */
  readonly return_tokens_as_token_ids?: boolean;
}

/**
 * An OpenAI-compatible endpoint (the embedded server, vLLM, vllm-gaudi), addressed by its base URL
 * without /v1. `model` is the served model id; `connect` reads it from /v1/models.
 */
export class Endpoint {
  private constructor(
    readonly url: string,
    readonly model: string,
    /** The context length /v1/models reports (vLLM and bringup do), if any. */
    readonly maxModelLen: number | undefined,
    readonly options: RequestOptions,
  ) {}

  /** Reads the served model from /v1/models, waiting `connectTimeoutMs` for it (default: the options' timeout). */
  static async connect(
    url: string,
    options: RequestOptions = {},
    connectTimeoutMs?: number,
  ): Promise<Endpoint> {
    const base = normalizeBaseUrl(url);
    const listing = connectTimeoutMs === undefined ? options : { ...options, timeoutMs: connectTimeoutMs };
    const models = await requestJson(`${base}/v1/models`, ModelsResponse, undefined, listing);
    const first = models.data[0] as z.infer<typeof ModelsResponse>["data"][number];
    return new Endpoint(base, first.id, first.max_model_len ?? undefined, options);
  }

  /** GET /version: vLLM answers {version}; bringup adds {server: "bringup"}. */
  version(): Promise<z.infer<typeof VersionResponse>> {
    return requestJson(`${this.url}/version`, VersionResponse, undefined, this.options);
  }

  /** POST /tokenize (vLLM's route): the token ids of `text`. */
  async tokenize(text: string, addSpecialTokens = false): Promise<number[]> {
    const body = { model: this.model, prompt: text, add_special_tokens: addSpecialTokens };
    return (await requestJson(`${this.url}/tokenize`, TokenizeResponse, body, this.options)).tokens;
  }

  async complete(request: CompletionRequest): Promise<CompletionChoice & { promptTokens?: number }> {
    const response = await requestJson(
      `${this.url}/v1/completions`,
      CompletionResponse,
      { model: this.model, ...request },
      this.options,
    );
    const choice = response.choices[0] as CompletionChoice;
    const promptTokens = response.usage?.prompt_tokens;
    return promptTokens === undefined ? choice : { ...choice, promptTokens };
  }

  /** GET /metrics, Prometheus text. */
  metrics(): Promise<string> {
    return requestText(`${this.url}/metrics`, undefined, this.options);
  }
}

/** Accepts `http://host:port`, with or without a trailing `/` or `/v1`. */
export function normalizeBaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new BringupError(
      "ENDPOINT_URL_INVALID",
      `"${url}" is not a URL; pass the server's base URL, such as http://127.0.0.1:8000.`,
      { subject: url },
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new BringupError("ENDPOINT_URL_INVALID", `"${url}" must be an http or https URL.`, {
      subject: url,
    });
  }
  return parsed.href.replace(/\/+$/, "").replace(/\/v1$/, "");
}
