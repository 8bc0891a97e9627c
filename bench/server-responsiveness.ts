/**
 * Benchmark: does the server answer while its engine works, and what does n = 4 cost, in one run.
 *
 *   npx tsx bench/server-responsiveness.ts [--size medium] [--prompt 8000] [--streams 16]
 *     [--shared-prompt 1000] [--blocks 3] [--threads 2]
 *
 * 1. /health polled every 50 ms while one long prompt (--prompt tokens of ids) prefills, and while
 *    --streams streams decode, with the engine on its own thread (a generated tiny size) and on the
 *    HTTP thread (the same size, the model in memory); p50/p99/max of /health latency for each.
 * 2. One request with n = 4 against 4 separate requests sent at once (a --shared-prompt-token
 *    prompt, 16 tokens each, seeded), in --blocks ABBA blocks: the ratio of wall times with its 95%
 *    interval. The n = 4 request prefills its prompt once and copies its KV to the other three.
 */
import { Worker } from "node:worker_threads";
import { quantile } from "simple-statistics";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/index.js";
import { createTinyModel, findTinySize, type TinySize } from "../src/engine/index.js";
import { type RunningServer, startServer } from "../src/server/index.js";
import { benchArgs } from "./args.js";

const values = benchArgs(import.meta.url, {
  size: { type: "string", default: "medium" },
  prompt: { type: "string", default: "8000" },
  streams: { type: "string", default: "16" },
  "shared-prompt": { type: "string", default: "1000" },
  blocks: { type: "string", default: "3" },
  threads: { type: "string", default: "2" },
});
const size = findTinySize(values.size) as TinySize;
const promptLen = Number(values.prompt);
const streams = Number(values.streams);
const sharedPromptLen = Number(values["shared-prompt"]);
const blocks = Number(values.blocks);
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

const ids = (length: number, salt: number) =>
  Array.from({ length }, (_, i) => 5 + ((i * 7 + salt * 13) % 250));

const post = (server: RunningServer, json: object) =>
  fetch(`${server.url}/v1/completions`, { method: "POST", body: JSON.stringify(json) }).then((r) => r.text());

/** /health latencies polled while `work` runs. */
async function healthDuring(server: RunningServer, work: () => Promise<unknown>): Promise<number[]> {
  const poller = new Worker(POLLER, { eval: true, workerData: server.url });
  const latencies = new Promise<number[]>((resolve) => poller.once("message", resolve));
  await new Promise((r) => setTimeout(r, 200));
  await work();
  poller.postMessage("stop");
  const result = await latencies;
  await poller.terminate();
  return result;
}

const prefilling = (server: RunningServer) => () =>
  post(server, { prompt: ids(promptLen, 0), max_tokens: 1, temperature: 0 });

const decoding = (server: RunningServer) => () =>
  Promise.all(
    Array.from({ length: streams }, (_, i) =>
      post(server, {
        prompt: ids(16, i),
        max_tokens: 64,
        temperature: 0,
        ignore_eos: true,
        stream: true,
      }),
    ),
  );

const summary = (xs: number[]) =>
  `p50 ${quantile(xs, 0.5).toFixed(1)} ms, p99 ${quantile(xs, 0.99).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (${xs.length} polls)`;

const maxModelLen = promptLen + 256;
const common = { port: 0, threads, maxModelLen, maxNumSeqs: Math.max(16, streams) };

async function responsiveness(where: string, server: RunningServer) {
  const prefill = await healthDuring(server, prefilling(server));
  console.log(`${where}: /health while a ${promptLen}-token prompt prefills: ${summary(prefill)}`);
  const decode = await healthDuring(server, decoding(server));
  console.log(`${where}: /health while ${streams} streams decode: ${summary(decode)}`);
}

const threaded = await startServer({ ...common, tinySize: size.name });
await responsiveness("engine on its own thread ", threaded);

const body = { prompt: ids(sharedPromptLen, 1), max_tokens: 16, temperature: 1, seed: 7, ignore_eos: true };
const timed = async (run: () => Promise<unknown>) => {
  const t0 = performance.now();
  await run();
  return performance.now() - t0;
};
const nFour = () => post(threaded, { ...body, n: 4 });
const separate = () =>
  Promise.all(Array.from({ length: 4 }, (_, i) => post(threaded, { ...body, seed: 7 + i })));
await nFour(); // warm-up
// ABBA blocks, so drift on a shared machine falls on both arms alike.
const trials: BlockTrials[] = [];
for (let b = 0; b < blocks; b++) {
  const a1 = await timed(separate);
  const n1 = await timed(nFour);
  const n2 = await timed(nFour);
  const a2 = await timed(separate);
  trials.push({ a: [a1, a2], b: [n1, n2] });
}
const ratio = blockedRatioInterval(trials);
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
console.log(
  `n=4 (one ${sharedPromptLen}-token prefill) ${mean(trials.flatMap((t) => t.b)).toFixed(0)} ms; 4 separate requests ${mean(trials.flatMap((t) => t.a)).toFixed(0)} ms; ratio n=4 / separate ${ratio.estimate.toFixed(2)} (95% ${ratio.low.toFixed(2)}-${ratio.high.toFixed(2)}, ${blocks} ABBA blocks)`,
);
await threaded.close();

const inThread = await startServer({ ...common, model: await createTinyModel(size) });
await responsiveness("engine on the HTTP thread", inThread);
await inThread.close();
