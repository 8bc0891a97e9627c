/**
 * Benchmark: does the server answer while its engine works, and what does n = 4 cost, in one run.
 *
 *   npx tsx bench/server-responsiveness.ts [--size medium] [--prompt 8000] [--threads 2]
 *
 * 1. /health polled every 50 ms while one long prompt (--prompt tokens of ids) prefills, with the
 *    engine on its own thread (a generated tiny size) and on the HTTP thread (the same size, the
 *    model in memory); p50/p99/max of /health latency for each and their ratio.
 * 2. One request with n = 4 against 4 separate requests sent at once (both 64 tokens, seeded):
 *    wall time of each and the ratio. The engine does not share the prompt's KV between the four
 *    sequences, so the ratio shows batching alone.
 */
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { quantile } from "simple-statistics";
import { createTinyModel, findTinySize, type TinySize } from "../src/engine/index.js";
import { type RunningServer, startServer } from "../src/server/index.js";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "medium" },
    prompt: { type: "string", default: "8000" },
    threads: { type: "string", default: "2" },
  },
});
const size = findTinySize(values.size) as TinySize;
const promptLen = Number(values.prompt);
const threads = Number(values.threads);

/**
 * Polls /health every 50 ms from a worker thread until told to stop: with the engine on the HTTP
 * thread of this very process, a poller on the main thread would be frozen with it.
 */
const POLLER = `
const { parentPort, workerData } = require("node:worker_threads");
const latencies = [];
let stop = false;
parentPort.on("message", () => { stop = true; });
(async () => {
  while (!stop) {
    const t0 = performance.now();
    // A poll that fails counts with the time it took to fail.
    await fetch(workerData + "/health").then((r) => r.arrayBuffer(), () => undefined);
    latencies.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 50));
  }
  parentPort.postMessage(latencies);
})();
`;

async function healthWhilePrefilling(server: RunningServer): Promise<number[]> {
  const prompt = Array.from({ length: promptLen }, (_, i) => 5 + ((i * 7) % 250));
  const poller = new Worker(POLLER, { eval: true, workerData: server.url });
  const latencies = new Promise<number[]>((resolve) => poller.once("message", resolve));
  await new Promise((r) => setTimeout(r, 200));
  const res = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    body: JSON.stringify({ prompt, max_tokens: 1, temperature: 0 }),
  });
  await res.text();
  poller.postMessage("stop");
  const result = await latencies;
  await poller.terminate();
  return result;
}

const summary = (xs: number[]) =>
  `p50 ${quantile(xs, 0.5).toFixed(1)} ms, p99 ${quantile(xs, 0.99).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (${xs.length} polls)`;

const maxModelLen = promptLen + 256;
const common = { port: 0, threads, maxModelLen, maxNumSeqs: 8 };
const threaded = await startServer({ ...common, tinySize: size.name });
const onThread = await healthWhilePrefilling(threaded);
console.log(`engine on its own thread:  /health ${summary(onThread)}`);

const body = {
  prompt: "The lamp on the breakwater",
  max_tokens: 64,
  temperature: 1,
  seed: 7,
  ignore_eos: true,
};
const post = (json: object) =>
  fetch(`${threaded.url}/v1/completions`, { method: "POST", body: JSON.stringify(json) }).then((r) =>
    r.json(),
  );
const timed = async (run: () => Promise<unknown>) => {
  const t0 = performance.now();
  await run();
  return performance.now() - t0;
};
const nFour = () => post({ ...body, n: 4 });
const separate = () => Promise.all(Array.from({ length: 4 }, (_, i) => post({ ...body, seed: 7 + i })));
await nFour(); // warm-up
// ABBA, so drift on a shared machine falls on both arms alike.
const a = [await timed(nFour)];
const b = [await timed(separate), await timed(separate)];
a.push(await timed(nFour));
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
console.log(
  `n=4: ${mean(a).toFixed(0)} ms; 4 separate requests: ${mean(b).toFixed(0)} ms; ratio ${(mean(a) / mean(b)).toFixed(2)} (ABBA, means of 2)`,
);
await threaded.close();

const inThread = await startServer({ ...common, model: await createTinyModel(size) });
const onHttp = await healthWhilePrefilling(inThread);
console.log(`engine on the HTTP thread: /health ${summary(onHttp)}`);
console.log(
  `p99 ratio (HTTP thread / own thread): ${(quantile(onHttp, 0.99) / quantile(onThread, 0.99)).toFixed(1)}`,
);
await inThread.close();
