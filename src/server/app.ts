import type { IncomingMessage } from "node:http";
import { getConnInfo } from "@hono/node-server/conninfo";
import { Hono } from "hono";
import packageJson from "../../package.json" with { type: "json" };
import { ApiError, toApiError } from "./api-error.js";
import { requireApiKey } from "./auth.js";
import { chatCompletions } from "./chat.js";
import { completions } from "./completions.js";
import { newRequestId, type ServerContext } from "./context.js";
import { discardBody } from "./drain.js";
import { bodyTooLarge } from "./request-body.js";
import type { RequestRecord } from "./request-log.js";
import { detokenize, tokenize } from "./tokenize.js";

type AppEnv = {
  Variables: { record: RequestRecord };
  Bindings: { incoming?: IncomingMessage };
};

/** The OpenAI-compatible routes over one engine. Every failure answers with an OpenAI error body. */
export function createApp(ctx: ServerContext, options: { readonly apiKey?: string } = {}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("*", async (c, next) => {
    await next();
    // A refusal answered before the body was read (401, 404, 413): the rest is read and discarded
    // first, so the client gets the answer and a connection it can reuse; past a bound, it is closed.
    const incoming = c.env?.incoming;
    if (incoming === undefined || incoming.complete || c.req.raw.body === null) return;
    if (!(await discardBody(c.req.raw.body))) c.header("Connection", "close");
  });
  app.use("*", async (c, next) => {
    const requested = c.req.header("x-request-id");
    let client = "-";
    try {
      const info = getConnInfo(c).remote;
      client = `${info.address}:${info.port}`;
    } catch {
      // Not served by node-server (app.request in tests): no socket to name.
    }
    const record: RequestRecord = {
      requestId: requested && /^[\w.-]{1,128}$/.test(requested) ? requested : newRequestId(),
      method: c.req.method,
      path: c.req.path,
      client,
      arrival: performance.now(),
    };
    c.set("record", record);
    c.header("X-Request-Id", record.requestId);
    await next();
    if (!record.deferred) ctx.log.request(record, c.res.status);
  });
  app.onError((error, c) => {
    const api = toApiError(error);
    const record = c.get("record");
    if (record !== undefined) {
      record.deferred = false;
      ctx.log.error(record, api.status, api.code, api.message);
    }
    return c.json(api.body(), api.status);
  });
  app.notFound((c) => {
    const api = new ApiError(
      404,
      `there is no route ${c.req.method} ${c.req.path}; see /v1/models, /v1/completions, /v1/chat/completions.`,
      "not_found",
    );
    const record = c.get("record");
    if (record !== undefined) ctx.log.error(record, api.status, api.code, api.message);
    return c.json(api.body(), 404);
  });
  if (options.apiKey !== undefined) app.use("*", requireApiKey(options.apiKey));
  app.use("*", async (c, next) => {
    const declared = Number(c.req.header("content-length") ?? 0);
    if (declared > ctx.maxRequestBodyBytes) throw bodyTooLarge(ctx.maxRequestBodyBytes);
    await next();
  });

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
          root: ctx.engine.modelRoot,
          parent: null,
          max_model_len: ctx.engine.limits.maxModelLen,
        },
      ],
    }),
  );
  app.post("/v1/completions", (c) => completions(ctx, c, c.get("record")));
  app.post("/v1/chat/completions", (c) => chatCompletions(ctx, c, c.get("record")));
  app.post("/tokenize", (c) => tokenize(ctx, c));
  app.post("/detokenize", (c) => detokenize(ctx, c));
  return app;
}
