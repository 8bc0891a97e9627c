import type { ErrorCode } from "./error-catalogue.js";

/**
 * Every failure a library caller can see is a BringupError with a stable `code`
 * (in the style of undici's UND_ERR_*), declared once in error-catalogue.ts with the HTTP status and
 * exit code it maps to. Messages say what went wrong and what to do next.
 */
export class BringupError extends Error {
  readonly code: ErrorCode;
  /** The file, tensor, field or URL the error is about, when there is one. */
  readonly subject?: string;

  constructor(code: ErrorCode, message: string, options?: { subject?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "BringupError";
    this.code = code;
    this.subject = options?.subject;
  }
}

export function isBringupError(value: unknown): value is BringupError {
  return value instanceof BringupError;
}
