import { type ErrorHttpStatus, errorCategory, httpStatus, openaiCode } from "../common/error-catalogue.js";
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
    readonly status: ErrorHttpStatus | 401 | 404 | 413,
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

/**
 * Any thrown value as an ApiError: a BringupError answers with its catalogued status, a request
 * error with its OpenAI code and the field it is about; anything else is a 500.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isBringupError(error)) {
    const status = httpStatus(error.code);
    const category = errorCategory(error.code);
    if (category === "request")
      return new ApiError(status, error.message, openaiCode(error.code), error.subject ?? null);
    if (error.code === "ENGINE_CLOSED")
      return new ApiError(
        status,
        "the server is shutting down; retry against a running server.",
        "engine_closed",
      );
    if (category === "unavailable") return new ApiError(status, error.message, openaiCode(error.code));
    return new ApiError(status, `${error.message} [${error.code}]`, openaiCode(error.code));
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ApiError(500, `internal error: ${message}`, "internal_error");
}
