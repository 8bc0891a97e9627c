/**
 * Benchmark: the cost of bringup's bench harness itself, against a minimal loopback server, in one run.
 *
 *   npx tsx bench/client-overhead.ts [--seconds 5] [--connections 64] [--streams 256]
 *
 * 1. Sustained non-streaming request rate: the harness (runBench, closed loop at --connections)
 *    next to wrk (Debian's package) with the same connections against the same server, in the
 *    order harness, wrk, wrk, harness; the ratio is taken in each half. Goal: at least 0.5x wrk.
 * 2. SSE tokens parsed per second on one core: readTokenStream over an in-memory stream of
 *    completion chunks shaped like vLLM's. Goal: at least 100k tok/s.
 * 3. The client's own added TTFT at --streams concurrent streams. The server writes into the first
 *    chunk when it read the request and when it wrote that chunk, as epoch milliseconds
 *    (performance.timeOrigin + now(), one system clock for both processes). Reported: the response
 *    side (server wrote the first chunk -> the harness stamped it), which is the client's own
 *    delay, and the request side (the harness's slot came free -> the server read the request),
 *    which also holds the server's own queueing. Goal: under 1 ms at the median.
 *
 * The server runs in its own process so it does not share the harness's event loop.
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { randomWorkload, runBench, summarize } from "../src/bench/index.js";
import { readTokenStream } from "../src/client/index.js";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    connections: { type: "string", default: "64" },
    streams: { type: "string", default: "256" },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const STREAMS = Number(values.streams);
const TOKENS_PER_STREAM = 32;
const TOKEN_INTERVAL_MS = 20;

/**
 * The loopback server: non-streaming requests get a small completion at once; streaming ones get
 * their first chunk at once (its text states when the server read the request and when it wrote
 * the chunk, as epoch ms), then one token per tick for every open stream, as a batching engine would send them.
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
    const arrived = performance.timeOrigin + performance.now();
    const body = Buffer.concat(parts).toString();
    if (!body.includes('"stream":true')) {
      response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(whole) });
      response.end(whole);
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.write(chunk(arrived.toFixed(4) + "|" + (performance.timeOrigin + performance.now()).toFixed(4) + "|"));
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

async function harnessRate(url: string): Promise<number> {
  // Enough requests to run for about SECONDS at a generous guess of the rate; the figure is requests/duration.
  const count = Math.round(SECONDS * 6000);
  const result = await runBench({
    target: { url, model: "m", stream: false },
    workload: randomWorkload({ numPrompts: count, inputLen: 4, outputLen: 1, seed: 1 }),
    maxConcurrency: CONNECTIONS,
    checkTokenizer: false,
  });
  if (result.metrics.failed > 0) throw new Error(`harness: ${result.metrics.failed} requests failed`);
  return result.metrics.requestThroughput;
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
async function sseParseRate(): Promise<number> {
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
  let best = 0;
  for (let round = 0; round < 3; round++) {
    const start = performance.now();
    const stream = await readTokenStream(
      (async function* () {
        yield* pieces;
      })(),
    );
    const seconds = (performance.now() - start) / 1000;
    const tokens = stream.chunks.reduce((sum, c) => sum + c.tokens, 0);
    if (tokens !== events) throw new Error(`parsed ${tokens} tokens, expected ${events}`);
    best = Math.max(best, tokens / seconds);
  }
  return best;
}

/** Per request at STREAMS streams: the response-side and request-side delays of the first token, ms. */
async function firstTokenDelays(
  url: string,
): Promise<{ response: number[]; request: number[]; cpuShare: number; chunks: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
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
  const used = process.cpuUsage(cpu);
  const cpuShare = (used.user + used.system) / 1000 / (performance.now() - start);
  const chunks = result.requests.reduce((sum, r) => sum + r.chunkTimes.length, 0);
  // The first wave opens STREAMS connections at once; later waves reuse them, as a sustained run does.
  const later = result.requests.filter((r) => r.index >= STREAMS);
  const origin = performance.timeOrigin;
  const response = later.map((r) => origin + (r.chunkTimes[0] ?? Number.NaN) - Number(r.text.split("|")[1]));
  const request = later.map((r) => Number(r.text.split("|")[0]) - (origin + r.scheduledAt));
  return { response, request, cpuShare, chunks };
}

async function main(): Promise<void> {
  const { url, child } = await startLoopback();
  try {
    execFileSync("wrk", ["-v"], { stdio: "ignore" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      child.kill();
      throw new Error("wrk is not installed: apt-get install -y wrk");
    }
  }
  try {
    // Warm both clients and the server before anything is timed.
    await harnessRate(url);
    const h1 = await harnessRate(url);
    const w1 = wrkRate(url);
    const w2 = wrkRate(url);
    const h2 = await harnessRate(url);
    console.log(`non-streaming requests/s, ${CONNECTIONS} connections, ${SECONDS} s each (order H W W H):`);
    console.log(
      `  harness ${h1.toFixed(0)}, wrk ${w1.toFixed(0)}, wrk ${w2.toFixed(0)}, harness ${h2.toFixed(0)}`,
    );
    console.log(
      `  harness/wrk: first half ${(h1 / w1).toFixed(2)}x, second half ${(h2 / w2).toFixed(2)}x (goal >= 0.5x)`,
    );
    const parse = await sseParseRate();
    console.log(`SSE tokens parsed per second, one core: ${(parse / 1000).toFixed(0)}k (goal >= 100k)`);
    const delays = await firstTokenDelays(url);
    const response = summarize(delays.response, [50, 90, 99]);
    const request = summarize(delays.request, [50, 90, 99]);
    const line = (s: typeof response) =>
      `median ${s.median.toFixed(3)} ms, p90 ${s.percentiles["90"]?.toFixed(3)} ms, p99 ${s.percentiles["99"]?.toFixed(3)} ms`;
    console.log(
      `streaming at ${STREAMS} streams: ${delays.chunks} chunks, the harness process busy ${(delays.cpuShare * 100).toFixed(0)}% of one core`,
    );
    console.log(
      `  client-added TTFT, response side (server wrote -> harness stamped): ${line(response)} (goal median < 1 ms)`,
    );
    console.log(
      `  request side (slot free -> server read the request, server queueing included): ${line(request)}`,
    );
  } finally {
    child.kill();
  }
}

await main();
