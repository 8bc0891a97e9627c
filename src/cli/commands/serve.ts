import { type Command, InvalidArgumentError, Option } from "commander";
import { KV_LAYOUT_NAMES, type KvLayout, TINY_SIZES } from "../../engine/index.js";
import {
  DEFAULT_MAX_REQUEST_BODY_BYTES,
  DEFAULT_TEMPLATE_BUDGET,
  DEFAULT_TINY_SIZE,
  LOG_LEVELS,
  type LogLevel,
  type RunningServer,
  type ServerOptions,
  startServer,
} from "../../server/index.js";
import { untilSignalled } from "../signals.js";

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new InvalidArgumentError("expected a whole number >= 1.");
  return Number(value);
}

function kvLayout(value: string): KvLayout {
  const layout = KV_LAYOUT_NAMES.find((l) => l === value);
  if (layout === undefined)
    throw new InvalidArgumentError(
      `expected ${KV_LAYOUT_NAMES.join(" or ")} (window-sized keeps only each sliding window; full keeps every position).`,
    );
  return layout;
}

function tcpPort(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535)
    throw new InvalidArgumentError("expected a port number from 0 to 65535.");
  return Number(value);
}

const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  k: 1e3,
  m: 1e6,
  g: 1e9,
  ki: 2 ** 10,
  mi: 2 ** 20,
  gi: 2 ** 30,
};

/** One `--switch name=value`, added to those given before. */
function modelSwitch(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const match = /^([A-Za-z0-9_.-]+)=(.+)$/.exec(value);
  if (match === null) throw new InvalidArgumentError("expected name=value, e.g. kda_prefill=recurrent.");
  return { ...previous, [match[1] as string]: match[2] as string };
}

/** A byte count: 536870912, 512M, 512MiB, 1G, 1GiB (K/M/G are powers of 1000, Ki/Mi/Gi of 1024). */
export function byteSize(value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(k|m|g|ki|mi|gi)?b?$/i.exec(value.trim());
  const unit = UNITS[(match?.[2] ?? "").toLowerCase()];
  if (match === null || unit === undefined)
    throw new InvalidArgumentError("expected a size in bytes such as 268435456, 256MiB or 1G.");
  const bytes = Math.floor(Number(match[1]) * unit);
  if (bytes < 1) throw new InvalidArgumentError("expected a size of at least 1 byte.");
  return bytes;
}

interface ServeFlags {
  host: string;
  port: number;
  apiKey?: string;
  servedModelName?: string;
  maxModelLen?: number;
  maxNumSeqs?: number;
  kvCacheMemoryBytes?: number;
  blockSize?: number;
  kvLayout?: KvLayout;
  maxNumBatchedTokens?: number;
  speculativeTokens?: number;
  threads?: number;
  switch?: Record<string, string>;
  tiny: string;
  logLevel?: LogLevel;
  requestLines?: boolean;
  drainTimeout?: number;
  maxConnections?: number;
  trustRequestChatTemplate?: boolean;
  maxRequestBodySize?: number;
}

/** Options for startServer from the command line (exported for the command's test). */
export function serverOptions(modelDir: string | undefined, flags: ServeFlags): ServerOptions {
  const apiKey = flags.apiKey ?? process.env.BRINGUP_API_KEY;
  return {
    ...(modelDir !== undefined ? { modelDir } : { tinySize: flags.tiny }),
    log: (level, line) => {
      if (LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(flags.logLevel ?? "info"))
        (level === "info" || level === "debug" ? process.stdout : process.stderr).write(`${line}\n`);
    },
    requestLines: flags.requestLines ?? true,
    ...(flags.switch !== undefined ? { switches: flags.switch } : {}),
    host: flags.host,
    port: flags.port,
    ...(apiKey !== undefined && apiKey !== "" ? { apiKey } : {}),
    ...(flags.servedModelName !== undefined ? { servedModelName: flags.servedModelName } : {}),
    ...(flags.maxModelLen !== undefined ? { maxModelLen: flags.maxModelLen } : {}),
    ...(flags.maxNumSeqs !== undefined ? { maxNumSeqs: flags.maxNumSeqs } : {}),
    ...(flags.kvCacheMemoryBytes !== undefined ? { kvCacheBytes: flags.kvCacheMemoryBytes } : {}),
    ...(flags.blockSize !== undefined ? { blockSize: flags.blockSize } : {}),
    ...(flags.kvLayout !== undefined ? { kvLayout: flags.kvLayout } : {}),
    ...(flags.maxNumBatchedTokens !== undefined ? { maxNumBatchedTokens: flags.maxNumBatchedTokens } : {}),
    ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
    ...(flags.speculativeTokens !== undefined ? { speculativeTokens: flags.speculativeTokens } : {}),
    ...(flags.maxConnections !== undefined ? { maxConnections: flags.maxConnections } : {}),
    ...(flags.trustRequestChatTemplate ? { trustRequestChatTemplate: true } : {}),
    ...(flags.maxRequestBodySize !== undefined ? { maxRequestBodyBytes: flags.maxRequestBodySize } : {}),
  };
}

export function registerServe(
  program: Command,
  onListening?: (server: RunningServer) => Promise<void>,
): void {
  program
    .command("serve")
    .description("serve a model over an OpenAI-compatible API (vLLM's routes and flags) until Ctrl-C")
    .argument(
      "[MODEL_DIR]",
      `an HF-style model directory (config.json, tokenizer.json, safetensors); default: a generated tiny model`,
    )
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <n>", "port to listen on (0 picks a free one)", tcpPort, 8000)
    .option(
      "--api-key <key>",
      "require `Authorization: Bearer <key>` on /v1 routes (default: $BRINGUP_API_KEY, else none)",
    )
    .option(
      "--served-model-name <name>",
      "the model name clients send and see (default: the directory's name)",
    )
    .option(
      "--max-model-len <n>",
      "longest prompt + output in tokens (default: the model's max_position_embeddings)",
      positiveInt,
    )
    .option("--max-num-seqs <n>", "most requests running at once (default 64)", positiveInt)
    .option(
      "--kv-cache-memory-bytes <size>",
      "KV cache budget, e.g. 256MiB or 1G (default: room for max-num-seqs full-length requests, at most 1 GiB)",
      byteSize,
    )
    .option("--block-size <n>", "tokens per KV cache block (default 16)", positiveInt)
    .option(
      "--kv-layout <layout>",
      "KV of sliding-window layers: window-sized (only the window, as a ring of blocks) or full (every position, masked); default window-sized",
      kvLayout,
    )
    .option(
      "--max-num-batched-tokens <n>",
      "most tokens one engine step runs (default max(2048, max-num-seqs))",
      positiveInt,
    )
    .option("--threads <n>", "matmul threads (default: all cores)", positiveInt)
    .option(
      "--speculative-tokens <k>",
      "speculative decoding: tokens the model's MTP layer drafts per step, verified in one step (default off); acceptance is in /metrics",
      positiveInt,
    )
    .option(
      "--switch <name=value>",
      "set one of the model's switches (repeatable), e.g. kda_prefill=recurrent; the model code declares them, a model with MXFP4 weights has mxfp4=fused|unpacked|int8, and one with block-scaled FP8 weights fp8=exact|scaled (scaled: 128x128 tile scales only)",
      modelSwitch,
    )
    .addOption(
      new Option("--log-level <level>", "least severe log lines printed").choices(LOG_LEVELS).default("info"),
    )
    .option("--no-request-lines", "do not log a line per request (errors are still logged)")
    .option(
      "--drain-timeout <seconds>",
      "on SIGTERM/SIGINT, seconds requests in flight may take to finish before they end with an error",
      positiveInt,
      30,
    )
    .option(
      "--max-connections <n>",
      "most open connections; more are closed on arrival (default 512)",
      positiveInt,
    )
    .option(
      "--trust-request-chat-template",
      `run a request's own chat_template (client code: each renders on a thread of its own within ${DEFAULT_TEMPLATE_BUDGET.milliseconds} ms and ${DEFAULT_TEMPLATE_BUDGET.heapMiB} MiB of heap, else a 400); without it such requests are refused`,
    )
    .option(
      "--max-request-body-size <size>",
      `hard cap on a request body, e.g. 64MiB (default ${DEFAULT_MAX_REQUEST_BODY_BYTES / 2 ** 20}MiB); below it a body may hold what its prompts of max-model-len tokens need, per prompt`,
      byteSize,
    )
    .addOption(
      new Option("--tiny <size>", "tiny model generated when there is no MODEL_DIR")
        .choices(TINY_SIZES.map((s) => s.name))
        .default(DEFAULT_TINY_SIZE),
    )
    .action(async (modelDir: string | undefined, flags: ServeFlags) => {
      // Loading (or generating the tiny model) takes seconds; say what is happening meanwhile.
      process.stdout.write(
        modelDir !== undefined ? `loading ${modelDir}\n` : `generating the tiny model "${flags.tiny}"\n`,
      );
      const server = await startServer(serverOptions(modelDir, flags));
      const l = server.limits;
      process.stdout.write(
        `serving ${server.modelName} at ${server.url} (OpenAI base URL ${server.url}/v1)\n` +
          `max-model-len ${l.maxModelLen}, max-num-seqs ${l.maxNumSeqs}, KV cache ${l.kvBlocks} blocks of ${l.blockSize} tokens (${l.kvLayout}, ${l.kvTokenCapacity} tokens at max-model-len)` +
          `${flags.apiKey || process.env.BRINGUP_API_KEY ? ", API key required" : ""}; Ctrl-C stops\n`,
      );
      await (onListening ? onListening(server) : untilSignalled());
      process.stdout.write(`draining requests in flight (up to ${flags.drainTimeout} s)\n`);
      await server.close({ drainSeconds: flags.drainTimeout ?? 0 });
    });
}
