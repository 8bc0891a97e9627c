import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import packageJson from "../../package.json" with { type: "json" };
import { ApiError, toApiError } from "./api-error.js";
import { requireApiKey } from "./auth.js";
import { chatCompletions } from "./chat.js";
import { completions } from "./completions.js";
import type { ServerContext } from "./context.js";
import { detokenize, tokenize } from "./tokenize.js";

/** Far above any prompt the engine can take (even token ids at the longest context), far below harm. */
const MAX_BODY_BYTES = 32 * 2 ** 20;

/** The OpenAI-compatible routes over one engine. Every failure answers with an OpenAI error body. */
export function createApp(ctx: ServerContext, options: { readonly apiKey?: string } = {}): Hono {
  const app = new Hono();
  app.onError((error, c) => {
    const api = toApiError(error);
    return c.json(api.body(), api.status);
  });
  app.notFound((c) => {
    const api = new ApiError(
      404,
      `there is no route ${c.req.method} ${c.req.path}; see /v1/models, /v1/completions, /v1/chat/completions.`,
      "not_found",
    );
    return c.json(api.body(), 404);
  });
  if (options.apiKey !== undefined) app.use("*", requireApiKey(options.apiKey));
  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError(
          413,
          `the request body is over ${MAX_BODY_BYTES / 2 ** 20} MiB; send a shorter prompt.`,
          "body_too_large",
        );
      },
    }),
  );

  app.get("/health", (c) => c.body(null, 200));
  // `server` tells a client's fingerprint this is bringup, not vLLM, which answers only `version`.
  app.get("/version", (c) => c.json({ version: packageJson.version, server: "bringup" }));
  app.get("/metrics", async (c) => {
    const { body, contentType } = await ctx.metrics.render();
    return c.body(body, 200, { "Content-Type": contentType });
  });
  app.get("/v1/models", (c) =>
    c.json({
      object: "list",
      data: [
        {
          id: ctx.modelName,
          object: "model",
          created: ctx.startedAt,
          owned_by: "bringup",
          root: ctx.engine.model.directory ?? ctx.engine.model.name,
          parent: null,
          max_model_len: ctx.engine.limits.maxModelLen,
        },
      ],
    }),
  );
  app.post("/v1/completions", (c) => completions(ctx, c, performance.now()));
  app.post("/v1/chat/completions", (c) => chatCompletions(ctx, c, performance.now()));
  app.post("/tokenize", (c) => tokenize(ctx, c));
  app.post("/detokenize", (c) => detokenize(ctx, c));
  return app;
}
