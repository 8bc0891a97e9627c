import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { BringupError } from "../common/errors.js";
import {
  type Architecture,
  createTinyModel,
  Engine,
  type EngineLimits,
  findTinySize,
  type KvLayout,
  type LoadedModel,
  loadModel,
  TINY_SIZES,
} from "../engine/index.js";
import { createApp } from "./app.js";
import { ServerMetrics } from "./metrics.js";

/** The tiny size served when no model is given: the size table's end-to-end and server default. */
export const DEFAULT_TINY_SIZE = "small";

export interface ServerOptions {
  /** An HF-style model directory; absent serves a generated tiny model. */
  readonly modelDir?: string;
  /** Which tiny size to generate when there is no modelDir (default "small"). */
  readonly tinySize?: string;
  /** Model code for modelDir's model_type beyond the built-in llama family (the ports' architectures). */
  readonly architectures?: readonly Architecture[];
  /** Values of the model's switches (see the architecture's declaration). */
  readonly switches?: Readonly<Record<string, string>>;
  /** An already loaded model (takes precedence over modelDir and tinySize; lets tests share one). */
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
  /** Matmul threads (default: all cores). */
  readonly threads?: number;
}

export interface RunningServer {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:8000 (the OpenAI base URL is `${url}/v1`). */
  readonly url: string;
  readonly modelName: string;
  /** The engine's limits as resolved from the options. */
  readonly limits: EngineLimits;
  /** Stops listening, aborts requests in flight, stops the engine. */
  close(): Promise<void>;
}

async function resolveModel(options: ServerOptions): Promise<LoadedModel> {
  if (options.model !== undefined) return options.model;
  if (options.modelDir !== undefined)
    return loadModel(options.modelDir, { architectures: options.architectures ?? [] });
  const name = options.tinySize ?? DEFAULT_TINY_SIZE;
  const size = findTinySize(name);
  if (size === undefined) {
    throw new BringupError(
      "TINY_SIZE_UNKNOWN",
      `there is no tiny size "${name}"; pick one of ${TINY_SIZES.map((s) => s.name).join(", ")}.`,
      {
        subject: name,
      },
    );
  }
  return createTinyModel(size);
}

/** Loads the model, starts an engine and serves the OpenAI-compatible API over HTTP until closed. */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const model = await resolveModel(options);
  const engine = new Engine(model, {
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
  });
  const modelName = options.servedModelName ?? model.name;
  const metrics = new ServerMetrics(modelName, () => engine.stats());
  const app = createApp({ engine, metrics, modelName, startedAt: Math.floor(Date.now() / 1000) }, options);
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 8000;
  try {
    return await new Promise<RunningServer>((resolve, reject) => {
      const server = serve({ fetch: app.fetch, hostname: host, port }, (info: AddressInfo) => {
        const shown = host.includes(":") ? `[${host}]` : host;
        resolve({
          url: `http://${shown}:${info.port}`,
          modelName,
          limits: engine.limits,
          close: async () => {
            const closed = new Promise<void>((done) => server.close(() => done()));
            // Ending every request first lets their streams finish; then idle keep-alive sockets go.
            await engine.close();
            if ("closeAllConnections" in server) server.closeAllConnections();
            await closed;
          },
        });
      });
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
    await engine.close();
    throw error;
  }
}
