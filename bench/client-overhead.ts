/**
 * Benchmark: the cost of bringup's bench harness itself, against a minimal loopback server, in one run.
 *
 *   npx tsx bench/client-overhead.ts [--seconds 5] [--connections 64] [--streams 256] [--only rate|parse|ttft]
 *
 * 1. Sustained non-streaming request rate: the harness (runBench, closed loop at --connections)
 *    next to wrk (Debian's package) with the same connections against the same server, in the
 *    order harness, wrk, wrk, harness; the ratio is taken in each half. The server's CPU share in
 *    each arm is printed: near 100% means the server, not the client, set that arm's rate.
 * 2. SSE tokens parsed per second on one core: readTokenStream over an in-memory stream of
 *    completion chunks shaped like vLLM's, in 16 KiB reads, per second of the main thread's CPU
 *    time (wall-clock rate printed too). Goal: at least 100k tok/s.
 * 3. The client's own added TTFT at --streams concurrent streams. The server writes into the first
 *    chunk when it read the request and when it wrote that chunk, on the machine's monotonic clock
 *    (process.hrtime, CLOCK_MONOTONIC: one clock for every process, not stepped like the wall
 *    clock); the harness's own stamps (performance.now) are moved onto that clock by one offset
 *    read at start. Reported: the response side (the server wrote the first chunk -> the harness
 *    stamped it), which is the client's own delay: the loopback, the wait for the client's event
 *    loop, and the client's own work before the stamp; and the request side (the harness's slot
 *    came free -> the server read the request), which also holds the server's own queueing.
 *    Goal: under 1 ms at the median. Printed next to it: how long the harness's and the server's
 *    main threads waited for a CPU (run-queue wait from /proc/<pid>/schedstat) over the phase,
 *    because on a shared machine that wait lands in the response side and is not the client's.
 *
 * The server runs in its own process so it does not share the harness's event loop. On a machine
 * other work keeps busy, the TTFT figures are mostly that wait for a CPU (see the run-queue line);
 * the goal is meant for a quiet machine. Do not reach for a realtime policy (chrt -f) to get one:
 * wrk takes a whole core under it for its arms, and one such run was seen spinning on both cores
 * for minutes (the harness and its tsx parent), starving everything else on the machine.
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomWorkload, runBench, summarize } from "../src/bench/index.js";
import { readTokenStream } from "../src/client/index.js";
import { benchArgs } from "./args.js";

const values = benchArgs(import.meta.url, {
  seconds: { type: "string", default: "5" },
  connections: { type: "string", default: "64" },
  streams: { type: "string", default: "256" },
  // One part alone, e.g. to profile it: rate, parse or ttft.
  only: { type: "string" },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const STREAMS = Number(values.streams);
const TOKENS_PER_STREAM = 32;
const TOKEN_INTERVAL_MS = 20;

/**
 * The loopback server: non-streaming requests get a small completion at once; streaming ones get
 * their first chunk at once (its text states when the server read the request and when it wrote
 * the chunk, in ms on the monotonic clock), then one token per tick for every open stream, as a batching engine would send them.
 */
const SERVER_SOURCE = `
import { createServer } from "node:http";
const tokens = Number(process.env.TOKENS), intervalMs = Number(process.env.INTERVAL_MS);
const streams = new Set();
const chunk = (text) => "data: " + JSON.stringify({ id: "cmpl-1", object: "text_completion", model: "m", choices: [{ index: 0, text, logprobs: null, finish_reason: null }] }) + "\\n\\n";
const whole = JSON.stringify({ id: "cmpl-1", object: "text_completion", model: "m", choices: [{ index: 0, text: "hello", finish_reason: "length" }], usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 } });
setInterval(() => {
  for (const s of streams) {
    s.sent++;
    if (s.sent < tokens) { s.response.write(chunk("x")); continue; }
    s.response.end("data: " + JSON.stringify({ choices: [], usage: { prompt_tokens: 4, completion_tokens: tokens } }) + "\\n\\ndata: [DONE]\\n\\n");
    streams.delete(s);
  }
}, intervalMs);
const server = createServer((request, response) => {
  const parts = [];
  request.on("data", (d) => parts.push(d));
  request.on("end", () => {
    const arrived = Number(process.hrtime.bigint()) / 1e6;
    const body = Buffer.concat(parts).toString();
    if (!body.includes('"stream":true')) {
      response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(whole) });
      response.end(whole);
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.write(chunk(arrived.toFixed(4) + "|" + (Number(process.hrtime.bigint()) / 1e6).toFixed(4) + "|"));
    streams.add({ response, sent: 1 });
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

async function startLoopback(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", SERVER_SOURCE], {
    env: { ...process.env, TOKENS: String(TOKENS_PER_STREAM), INTERVAL_MS: String(TOKEN_INTERVAL_MS) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout?.once("data", (data: Buffer) => resolve(data.toString().trim()));
    child.once("exit", (code) => reject(new Error(`loopback server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** CPU time and run-queue wait (ms) of a process's main thread so far, from Linux's schedstat. */
function threadTimes(pid: number | undefined): { cpu: number; wait: number } | undefined {
  try {
    const [cpu, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ").map(Number);
    return cpu === undefined || wait === undefined ? undefined : { cpu: cpu / 1e6, wait: wait / 1e6 };
  } catch {
    return undefined;
  }
}

/** Runs `work` and says how busy a process's main thread was meanwhile, and how long it waited for a CPU. */
async function watched<T>(
  pid: number | undefined,
  work: () => Promise<T> | T,
): Promise<{ value: T; busy: string; waited: string }> {
  const before = threadTimes(pid);
  const start = performance.now();
  const value = await work();
  const wall = performance.now() - start;
  const after = threadTimes(pid);
  if (!before || !after) return { value, busy: "?", waited: "?" };
  const share = (ms: number) => `${((ms / wall) * 100).toFixed(0)}%`;
  return { value, busy: share(after.cpu - before.cpu), waited: share(after.wait - before.wait) };
}

/** Requests per second of the harness in a closed loop, and its CPU time per request (all threads), us. */
async function harnessRate(url: string): Promise<{ rate: number; cpuUs: number }> {
  // Enough requests to run for about SECONDS at a generous guess of the rate; the figure is requests/duration.
  const count = Math.round(SECONDS * 6000);
  const workload = randomWorkload({ numPrompts: count, inputLen: 4, outputLen: 1, seed: 1 });
  const cpu = process.cpuUsage();
  const result = await runBench({
    target: { url, model: "m", stream: false },
    workload,
    maxConcurrency: CONNECTIONS,
    checkTokenizer: false,
  });
  const used = process.cpuUsage(cpu);
  if (result.metrics.failed > 0) throw new Error(`harness: ${result.metrics.failed} requests failed`);
  return { rate: result.metrics.requestThroughput, cpuUs: (used.user + used.system) / count };
}

function wrkRate(url: string): number {
  const script = join(tmpdir(), `bringup-wrk-${process.pid}.lua`);
  const body = JSON.stringify({ model: "m", prompt: [5, 6, 7, 8], max_tokens: 1, temperature: 0 });
  writeFileSync(
    script,
    `wrk.method = "POST"\nwrk.body = '${body}'\nwrk.headers["Content-Type"] = "application/json"\n`,
  );
  const out = execFileSync(
    "wrk",
    ["-t1", `-c${CONNECTIONS}`, `-d${SECONDS}s`, "-s", script, `${url}/v1/completions`],
    { encoding: "utf8" },
  );
  const match = /Requests\/sec:\s+([\d.]+)/.exec(out);
  if (!match?.[1]) throw new Error(`could not read wrk's output:\n${out}`);
  return Number(match[1]);
}

/** tokens per second readTokenStream parses from memory, one core, best of three. */
async function sseParseRate(): Promise<{ perCpuSecond: number; perWallSecond: number }> {
  const events = 300_000;
  const one = `data: ${JSON.stringify({
    id: "cmpl-8f3c2a61b0e94d7f9a1c2b3d4e5f6a7b",
    object: "text_completion",
    created: 1796223483,
    model: "meta-llama/Llama-3.1-8B-Instruct",
    choices: [{ index: 0, text: " token", logprobs: null, finish_reason: null, stop_reason: null }],
    usage: null,
  })}\n\n`;
  const text = `${one.repeat(events)}data: [DONE]\n\n`;
  const bytes = new TextEncoder().encode(text);
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += 16 * 1024) pieces.push(bytes.subarray(at, at + 16 * 1024));
  let best = { perCpuSecond: 0, perWallSecond: 0 };
  for (let round = 0; round < 3; round++) {
    const cpu = threadTimes(process.pid);
    const start = performance.now();
    const stream = await readTokenStream(
      (async function* () {
        yield* pieces;
      })(),
    );
    const seconds = (performance.now() - start) / 1000;
    const after = threadTimes(process.pid);
    // The main thread's own CPU time: on a shared machine, wall time also counts waiting for a CPU.
    const cpuSeconds = cpu && after ? (after.cpu - cpu.cpu) / 1000 : seconds;
    const tokens = stream.chunks.reduce((sum, c) => sum + c.tokens, 0);
    if (tokens !== events) throw new Error(`parsed ${tokens} tokens, expected ${events}`);
    if (tokens / cpuSeconds > best.perCpuSecond)
      best = { perCpuSecond: tokens / cpuSeconds, perWallSecond: tokens / seconds };
  }
  return best;
}

/** Per request at STREAMS streams: the response-side and request-side delays of the first token, ms. */
async function firstTokenDelays(
  url: string,
): Promise<{ response: number[]; request: number[]; chunks: number }> {
  // performance.now() is CLOCK_MONOTONIC less this process's origin: one offset moves it onto the server's clock.
  const offset = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  const result = await runBench({
    target: { url, model: "m", tokenCounting: "chunks" },
    workload: randomWorkload({ numPrompts: STREAMS * 3, inputLen: 4, outputLen: TOKENS_PER_STREAM, seed: 2 }),
    maxConcurrency: STREAMS,
    checkTokenizer: false,
  });
  if (result.metrics.failed > 0) {
    throw new Error(
      `streaming: ${result.metrics.failed} requests failed: ${JSON.stringify(result.metrics.failures)}`,
    );
  }
  const chunks = result.requests.reduce((sum, r) => sum + r.chunkTimes.length, 0);
  // The first wave opens STREAMS connections at once; later waves reuse them, as a sustained run does.
  const later = result.requests.filter((r) => r.index >= STREAMS);
  const stamps = later.map((r) => r.text.split("|").slice(0, 2).map(Number));
  const response = later.map(
    (r, i) => offset + (r.chunkTimes[0] ?? Number.NaN) - (stamps[i]?.[1] ?? Number.NaN),
  );
  const request = later.map((r, i) => (stamps[i]?.[0] ?? Number.NaN) - (offset + r.scheduledAt));
  return { response, request, chunks };
}

async function main(): Promise<void> {
  const only = values.only;
  if (only !== undefined && !["rate", "parse", "ttft"].includes(only)) {
    throw new Error(`--only takes rate, parse or ttft, got ${only}`);
  }
  const { url, child } = await startLoopback();
  try {
    if (only === undefined || only === "rate") {
      try {
        execFileSync("wrk", ["-v"], { stdio: "ignore" });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") {
          throw new Error("wrk is not installed: apt-get install -y wrk");
        }
      }
      // Warm both clients and the server before anything is timed.
      await harnessRate(url);
      const arms = [];
      for (const arm of ["harness", "wrk", "wrk", "harness"] as const) {
        const run = await watched<{ rate: number; cpuUs?: number }>(child.pid, () =>
          arm === "wrk" ? { rate: wrkRate(url), cpuUs: undefined } : harnessRate(url),
        );
        arms.push({ arm, ...run });
      }
      const [h1, w1, w2, h2] = arms.map((a) => a.value.rate) as [number, number, number, number];
      console.log(`non-streaming requests/s, ${CONNECTIONS} connections, ${SECONDS} s each (order H W W H):`);
      console.log(`  ${arms.map((a) => `${a.arm} ${a.value.rate.toFixed(0)}`).join(", ")}`);
      const costs = arms.flatMap((a) => (a.value.cpuUs === undefined ? [] : [a.value.cpuUs.toFixed(1)]));
      console.log(`  the harness's CPU time per request (all threads): ${costs.join(", ")} us`);
      console.log(`  the server's CPU share in each arm: ${arms.map((a) => a.busy).join(", ")}`);
      console.log(
        `  harness/wrk: first half ${(h1 / w1).toFixed(2)}x, second half ${(h2 / w2).toFixed(2)}x (goal >= 0.5x)`,
      );
    }
    if (only === undefined || only === "parse") {
      const parse = await sseParseRate();
      console.log(
        `SSE tokens parsed per second of one core's CPU time: ${(parse.perCpuSecond / 1000).toFixed(0)}k (goal >= 100k); per wall-clock second ${(parse.perWallSecond / 1000).toFixed(0)}k`,
      );
    }
    if (only === undefined || only === "ttft") {
      const cpu = process.cpuUsage();
      const start = performance.now();
      const server = threadTimes(child.pid);
      const run = await watched(process.pid, () => firstTokenDelays(url));
      const used = process.cpuUsage(cpu);
      const wall = performance.now() - start;
      const serverAfter = threadTimes(child.pid);
      const delays = run.value;
      const response = summarize(delays.response, [50, 90, 99]);
      const request = summarize(delays.request, [50, 90, 99]);
      const line = (s: typeof response) =>
        `median ${s.median.toFixed(3)} ms, p90 ${s.percentiles["90"]?.toFixed(3)} ms, p99 ${s.percentiles["99"]?.toFixed(3)} ms`;
      const serverWait =
        server && serverAfter ? `${(((serverAfter.wait - server.wait) / wall) * 100).toFixed(0)}%` : "?";
      console.log(
        `streaming at ${STREAMS} streams: ${delays.chunks} chunks in ${(wall / 1000).toFixed(2)} s; harness CPU ${(((used.user + used.system) / 1000 / delays.chunks) * 1000).toFixed(1)} us per chunk (all threads)`,
      );
      console.log(
        `  harness main thread busy ${run.busy} of the time, waited for a CPU ${run.waited}; server main thread waited ${serverWait}`,
      );
      console.log(
        `  client-added TTFT, response side (server wrote -> harness stamped): ${line(response)} (goal median < 1 ms)`,
      );
      console.log(
        `  request side (slot free -> server read the request, server queueing included): ${line(request)}`,
      );
    }
  } finally {
    child.kill();
  }
}

await main();
