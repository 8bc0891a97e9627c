import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { ApiError } from "./api-error.js";

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/**
 * vLLM's --api-key rule: every /v1 route needs `Authorization: Bearer <key>`; /health, /metrics,
 * /version, /tokenize and /detokenize stay open. Keys are compared in constant time.
 */
export function requireApiKey(apiKey: string): MiddlewareHandler {
  const expected = digest(apiKey);
  return async (c, next) => {
    if (c.req.path.startsWith("/v1")) {
      const header = c.req.header("authorization");
      if (header === undefined) {
        throw new ApiError(
          401,
          "this server needs an API key: send the header `Authorization: Bearer <key>`.",
          "missing_api_key",
        );
      }
      const match = /^Bearer\s+(.+)$/i.exec(header.trim());
      if (match === null) {
        throw new ApiError(
          401,
          "the Authorization header must read `Bearer <key>`; fix its form.",
          "invalid_api_key",
        );
      }
      if (!timingSafeEqual(digest(match[1] as string), expected)) {
        throw new ApiError(
          401,
          "the API key is wrong; send the key the server was started with (--api-key).",
          "invalid_api_key",
        );
      }
    }
    await next();
  };
}
