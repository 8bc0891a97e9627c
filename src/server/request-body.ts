import { isInteger, parse } from "lossless-json";
import type { z } from "zod";
import { ApiError } from "./api-error.js";

/**
 * A request's body as text, refused with a 413 once it is over `most` bytes (the rest is left
 * for the app to discard, so the connection stays usable).
 */
export async function readBodyText(request: Request, most: number): Promise<string> {
  if (request.body === null) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > most) throw bodyTooLarge(most);
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The 413 for a body over serve's hard cap. */
export function bodyTooLarge(most: number): ApiError {
  return new ApiError(
    413,
    `the request body is over ${most} bytes, this server's most (serve --max-request-body-size); send fewer or shorter prompts.`,
    "body_too_large",
  );
}

/** The first problem zod found, as "`field`: what is wrong", and the field's name. */
function describeIssue(issue: z.core.$ZodIssue): { message: string; param: string | null } {
  const param = issue.path.length === 0 ? null : issue.path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => `\`${k}\``).join(", ");
    return {
      message: `${keys}: not a field this server knows, so it cannot be honored; remove it`,
      param: issue.keys[0] ?? param,
    };
  }
  const where = param === null ? "the request body" : `\`${param}\``;
  return { message: `${where}: ${issue.message}`, param };
}

/**
 * Parses a request body as JSON and checks it against `schema`; throws a 400 ApiError saying
 * which field is wrong and how, so a client can fix the request.
 */
export function parseBody<S extends z.ZodType>(text: string, schema: S): z.infer<S> {
  let json: unknown;
  try {
    // Integers beyond 2^53 stay exact as bigints (64-bit seeds): lossless-json, since JSON.parse
    // rounds them. It is many times slower, so only a body with a run of 16 digits takes it.
    json = /\d{16}/.test(text)
      ? parse(text, null, (n) => {
          const value = Number(n);
          return isInteger(n) && !Number.isSafeInteger(value) ? BigInt(n) : value;
        })
      : JSON.parse(text);
  } catch (cause) {
    throw new ApiError(
      400,
      `the request body is not valid JSON (${(cause as Error).message}); send a JSON object with Content-Type: application/json.`,
      "invalid_json",
    );
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ApiError(400, "the request body must be a JSON object.", "invalid_json");
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const { message, param } = issue
      ? describeIssue(issue)
      : { message: "the request body is invalid", param: null };
    throw new ApiError(400, `${message}; fix it and retry.`, "invalid_value", param);
  }
  return parsed.data;
}
