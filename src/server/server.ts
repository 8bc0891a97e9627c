import type { AddressInfo, Server } from "node:net";
import { serve } from "@hono/node-server";
import { BringupError } from "../common/errors.js";
import {
  Engine,
  type EngineLimits,
  type EngineOptions,
  findTinySize,
  type KvLayout,
  type LoadedModel,
  TINY_SIZES,
} from "../engine/index.js";
import { createApp } from "./app.js";
import { EngineThread } from "./engine-thread.js";
import type { ModelSource } from "./engine-thread-protocol.js";
import { ServerMetrics } from "./metrics.js";
import { type LogSink, RequestLog } from "./request-log.js";
import { RequestTemplateRenderer, type TemplateBudget } from "./request-template.js";
import { InThreadEngine, type ServedEngine } from "./served-engine.js";

/** Most bytes of a request body by default, whatever its prompts (serve's --max-request-body-size). */
export const DEFAULT_MAX_REQUEST_BODY_BYTES = 32 * 1024 * 1024;

/** The tiny size served when no model is given: the size table's end-to-end and server default. */
export const DEFAULT_TINY_SIZE = "small";

export interface ServerOptions {
  /** An HF-style model directory; absent serves a generated tiny model. */
  readonly modelDir?: string;
  /** Which tiny size to generate when there is no modelDir (default "small"). */
  readonly tinySize?: string;
  /** Values of the model's switches (see the architecture's declaration). */
  readonly switches?: Readonly<Record<string, string>>;
  /**
   * An already loaded model (takes precedence over modelDir and tinySize; lets tests share one).
   * Its engine steps on the HTTP thread, so a long prefill delays every route: a directory or a
   * tiny size runs the engine on a thread of its own instead.
   */
  readonly model?: LoadedModel;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 8000; 0 picks a free port. */
  readonly port?: number;
  /** When set, /v1 routes need `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** The model name clients send and see (default: the model's own name). */
  readonly servedModelName?: string;
  readonly maxModelLen?: number;
  readonly maxNumSeqs?: number;
  /** KV cache budget in bytes. */
  readonly kvCacheBytes?: number;
  readonly blockSize?: number;
  /** How sliding-window layers keep their KV: "window-sized" (default, a ring) or "full" (masked). */
  readonly kvLayout?: KvLayout;
  readonly maxNumBatchedTokens?: number;
  /** Tokens the model's MTP layer drafts per step for speculative decoding (default 0: off). */
  readonly speculativeTokens?: number;
  /** Matmul threads (default: all cores). */
  readonly threads?: number;
  /** Receives the log lines (request lines, errors); absent logs nothing. */
  readonly log?: LogSink;
  /** One line per request (default true); errors are logged either way. */
  readonly requestLines?: boolean;
  /** Seconds a client has to send its request headers (default 10; 300 with an in-memory `model`). */
  readonly headersTimeoutSeconds?: number;
  /** Most open connections; more are closed on arrival (default 512). */
  readonly maxConnections?: number;
  /**
   * Most step outputs a streaming client may leave unread before its request is aborted and its
   * socket closed (default 1024; the socket's own buffers come first).
   */
  readonly maxUnreadOutputs?: number;
  /**
   * Run requests' own `chat_template`s (vLLM's --trust-request-chat-template); without it they are
   * refused. They render on a thread of their own under `requestTemplateBudget`.
   */
  readonly trustRequestChatTemplate?: boolean;
  /** Time and heap one request template may use (default DEFAULT_TEMPLATE_BUDGET: 2000 ms, 64 MiB). */
  readonly requestTemplateBudget?: TemplateBudget;
  /** Most bytes of any request body (default 32 MiB); a body is also held to what its prompts need. */
  readonly maxRequestBodyBytes?: number;
}

export interface RunningServer {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:8000 (the OpenAI base URL is `${url}/v1`). */
  readonly url: string;
  readonly modelName: string;
  /** The engine's limits as resolved from the options. */
  readonly limits: EngineLimits;
  /** The engine steps on a thread of its own (false: on the HTTP thread, over a model in memory). */
  readonly engineThread: boolean;
  /**
   * Stops accepting connections, lets requests in flight finish for up to `drainSeconds` (default
   * 0), ends the rest with an error (503; a stream gets an error event), then stops the engine.
   */
  close(options?: { readonly drainSeconds?: number }): Promise<void>;
}

function tinySizeOf(options: ServerOptions): string {
  const name = options.tinySize ?? DEFAULT_TINY_SIZE;
  if (findTinySize(name) === undefined) {
    throw new BringupError(
      "TINY_SIZE_UNKNOWN",
      `there is no tiny size "${name}"; pick one of ${TINY_SIZES.map((s) => s.name).join(", ")}.`,
      { subject: name },
    );
  }
  return name;
}

/** The engine on its own thread, unless the model is already in memory on this one. */
async function startEngine(options: ServerOptions, engineOptions: EngineOptions): Promise<ServedEngine> {
  const model = options.model;
  if (model !== undefined)
    return new InThreadEngine(new Engine(model, engineOptions), options.maxUnreadOutputs);
  const source: ModelSource =
    options.modelDir !== undefined ? { modelDir: options.modelDir } : { tinySize: tinySizeOf(options) };
  return EngineThread.start(source, engineOptions, options.maxUnreadOutputs);
}

/** Loads the model, starts an engine and serves the OpenAI-compatible API over HTTP until closed. */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const engine = await startEngine(options, {
    ...(options.maxNumSeqs !== undefined ? { maxNumSeqs: options.maxNumSeqs } : {}),
    ...(options.switches !== undefined ? { switches: options.switches } : {}),
    ...(options.maxModelLen !== undefined ? { maxModelLen: options.maxModelLen } : {}),
    ...(options.kvCacheBytes !== undefined ? { kvCacheBytes: options.kvCacheBytes } : {}),
    ...(options.blockSize !== undefined ? { blockSize: options.blockSize } : {}),
    ...(options.kvLayout !== undefined ? { kvLayout: options.kvLayout } : {}),
    ...(options.maxNumBatchedTokens !== undefined
      ? { maxNumBatchedTokens: options.maxNumBatchedTokens }
      : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.speculativeTokens !== undefined ? { speculativeTokens: options.speculativeTokens } : {}),
  });
  const modelName = options.servedModelName ?? engine.modelName;
  const metrics = new ServerMetrics(modelName, () => engine.stats());
  engine.onStep((tokens) => metrics.iteration(tokens));
  const shutdown = new AbortController();
  const log = new RequestLog(options.log, options.requestLines ?? true);
  const templates = options.trustRequestChatTemplate
    ? new RequestTemplateRenderer(options.requestTemplateBudget)
    : undefined;
  const app = createApp(
    {
      engine,
      metrics,
      modelName,
      startedAt: Math.floor(Date.now() / 1000),
      shutdown: shutdown.signal,
      log,
      maxRequestBodyBytes: options.maxRequestBodyBytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES,
      ...(templates !== undefined ? { templates } : {}),
    },
    options,
  );
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 8000;
  // On the HTTP thread a step can hold the event loop for many seconds, and headers that arrived
  // meanwhile would count as late; there the default is the body's 5 minutes.
  const headersTimeout =
    (options.headersTimeoutSeconds ?? (engine instanceof InThreadEngine ? 300 : 10)) * 1000;
  try {
    return await new Promise<RunningServer>((resolve, reject) => {
      const server = serve(
        {
          fetch: app.fetch,
          hostname: host,
          port,
          // Slow headers are cut after headersTimeout, checked every second (Node's default is 30 s); a body has 5 minutes.
          serverOptions: { headersTimeout, requestTimeout: 300_000, connectionsCheckingInterval: 1000 },
        },
        (info: AddressInfo) => {
          const shown = host.includes(":") ? `[${host}]` : host;
          resolve({
            url: `http://${shown}:${info.port}`,
            modelName,
            limits: engine.limits,
            engineThread: engine instanceof EngineThread,
            close: async ({ drainSeconds = 0 } = {}) => {
              const closed = new Promise<void>((done) => server.close(() => done()));
              if ("closeIdleConnections" in server) server.closeIdleConnections();
              const idle = () => {
                const s = engine.stats();
                return s.running + s.waiting === 0;
              };
              const until = performance.now() + drainSeconds * 1000;
              while (!idle() && performance.now() < until) await new Promise((r) => setTimeout(r, 50));
              // Requests still running end with a 503 (or an error event); their streams finish.
              shutdown.abort();
              await new Promise((r) => setTimeout(r, 50));
              await Promise.all([engine.close(), templates?.close()]);
              if ("closeAllConnections" in server) server.closeAllConnections();
              await closed;
            },
          });
        },
      );
      (server as Server).maxConnections = options.maxConnections ?? 512;
      server.once("error", (error: NodeJS.ErrnoException) => {
        reject(
          new BringupError(
            "SERVE_LISTEN_FAILED",
            `could not listen on ${host}:${port} (${error.code ?? error.message}); pick another --port or --host.`,
            {
              subject: `${host}:${port}`,
              cause: error,
            },
          ),
        );
      });
    });
  } catch (error) {
    await Promise.all([engine.close(), templates?.close()]);
    throw error;
  }
}
