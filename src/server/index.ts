/**
 * The OpenAI-compatible HTTP server over the reference engine, with vLLM's conventions:
 * /v1/completions, /v1/chat/completions (streaming SSE), /v1/models, /tokenize, /detokenize,
 * /health, /version and /metrics (Prometheus; names in METRIC_NAMES).
 *
 *   const server = await startServer({ tinySize: "tiny", port: 0 });
 *   const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" });
 *   ...
 *   await server.close();
 */

export type { ErrorBody } from "./api-error.js";
export { METRIC_NAMES } from "./metrics.js";
export type { LogLevel, LogSink } from "./request-log.js";
export { LOG_LEVELS } from "./request-log.js";
export { DEFAULT_TEMPLATE_BUDGET, type TemplateBudget } from "./request-template.js";
export type { RunningServer, ServerOptions } from "./server.js";
export { DEFAULT_MAX_REQUEST_BODY_BYTES, DEFAULT_TINY_SIZE, startServer } from "./server.js";
