import { isBringupError } from "../common/errors.js";

/** The `type` field of an OpenAI error body, by HTTP status. */
function errorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 404) return "not_found_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/**
 * OpenAI's error body as vLLM sends it: `{ error: { message, type, param, code } }` with the HTTP
 * status as `code` (vllm/entrypoints/openai/protocol.py, ErrorInfo). The server's own stable
 * code (ApiError.code) is in the log line.
 */
export interface ErrorBody {
  readonly error: {
    readonly message: string;
    readonly type: string;
    readonly param: string | null;
    readonly code: number;
  };
}

/**
 * A request the server refuses, with the HTTP status and OpenAI error body it answers with.
 * Thrown from route handlers and turned into a response by the app's error handler.
 */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 408 | 413 | 500 | 503,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }

  body(): ErrorBody {
    return {
      error: { message: this.message, type: errorType(this.status), param: this.param, code: this.status },
    };
  }
}

/** Engine and tokenizer error codes that mean "the request is wrong", with the OpenAI code to report. */
const REQUEST_ERRORS: Readonly<Record<string, string>> = {
  PROMPT_EMPTY: "invalid_prompt",
  TOKEN_OUT_OF_RANGE: "invalid_prompt",
  INVALID_MAX_TOKENS: "invalid_value",
  CONTEXT_TOO_LONG: "context_length_exceeded",
  KV_CAPACITY_EXCEEDED: "context_length_exceeded",
  INVALID_LOGPROBS: "invalid_value",
  INVALID_SAMPLING_PARAMS: "invalid_value",
  NO_CHAT_TEMPLATE: "chat_template_missing",
  CHAT_TEMPLATE_FAILED: "chat_template_failed",
  CHAT_TEMPLATE_INVALID: "chat_template_invalid",
};

/** Any thrown value as an ApiError: request errors from the engine become 400s, the rest 500 or 503. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isBringupError(error)) {
    const code = REQUEST_ERRORS[error.code];
    if (code !== undefined) return new ApiError(400, error.message, code, error.subject ?? null);
    if (error.code === "CLIENT_TOO_SLOW") return new ApiError(408, error.message, "client_too_slow");
    if (error.code === "SERVER_SHUTTING_DOWN")
      return new ApiError(503, error.message, "server_shutting_down");
    if (error.code === "ENGINE_CLOSED")
      return new ApiError(
        503,
        "the server is shutting down; retry against a running server.",
        "engine_closed",
      );
    return new ApiError(500, `${error.message} [${error.code}]`, error.code.toLowerCase());
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ApiError(500, `internal error: ${message}`, "internal_error");
}
