/**
 * What a change to the engine costs: the same tiny model's prefill and decode on this tree's engine
 * (built, dist/) and on another checkout's (--before DIR, built with `npx tsc -p
 * tsconfig.build.json`), measured in balanced blocks: ABBA, then BAAB, alternating, so neither the
 * machine's drift nor which engine runs first in a block falls on one arm. Each block runs in a
 * process of its own that builds both arms' models and engines (the first built alternating too):
 * an engine keeps a speed of its own for the life of the process (where its weights and threads
 * landed; two builds of one tree in one process differed by 1.23x, "shown"), which would otherwise
 * fall on one arm for the whole run and be read as the change's. Each block's after/before ratio
 * is printed; then, per figure, the after/before ratio with its 95% interval and the verdict
 * abVerdict gives it (no-difference, noisy or shown). The interval (blockedRatioInterval,
 * src/bench/stats.ts) takes one figure an arm a block, the geometric mean of its two trials, as
 * the two trials share their process's speed and are not two draws of it: so it is a t interval
 * over the blocks' log ratios, blocks - 1 degrees of freedom. Figures:
 * tokens per second of wall time and per CPU-second of the process (all threads), which a loaded
 * machine disturbs less than wall time. With --streams N, N requests are submitted together: prefill
 * runs until every stream has its first token, decode from then to the last token, counting every
 * stream's tokens (the aggregate rate of N streams all decoding).
 *
 *   git worktree add /tmp/before <commit> && (cd /tmp/before && ln -s "$PWD/node_modules" . && npx tsc -p tsconfig.build.json)
 *   npm run build && npx tsx bench/engine-before-after.ts --before /tmp/before [--size bench-100m]
 *     [--prompt 512] [--decode 32] [--blocks 6] [--threads 2] [--streams 1]
 */
import { fork } from "node:child_process";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/stats.js";
import { abVerdict } from "../src/records/interval.js";
import { benchArgs } from "./args.js";
import { type StreamEngine, type StreamRates, streamRates, syntheticPrompts } from "./stream-rates.js";

const args = benchArgs(import.meta.url, {
  before: { type: "string" },
  size: { type: "string", default: "bench-100m" },
  prompt: { type: "string", default: "512" },
  decode: { type: "string", default: "32" },
  blocks: { type: "string", default: "6" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
  streams: { type: "string", default: "1" },
});
if (args.before === undefined) throw new Error("pass --before DIR: a built checkout to compare against");
const promptTokens = Number(args.prompt);
const decodeTokens = Number(args.decode);
const blockCount = Number(args.blocks);
const threads = Number(args.threads);
const streams = Number(args.streams);

/** The parts of an engine module both trees export under the same names. */
interface EngineModule {
  Engine: new (model: unknown, options: object) => StreamEngine & { close(): Promise<void> };
  createTinyModel(size: unknown, options?: object): Promise<unknown>;
  findTinySize(name: string): unknown;
}

async function engineOf(root: string): Promise<EngineModule> {
  return (await import(pathToFileURL(join(resolve(root), "dist/src/engine/index.js")).href)) as EngineModule;
}

const arms = {
  before: await engineOf(args.before),
  after: await engineOf(join(import.meta.dirname, "..")),
};

/** Rates of this run's streams (stream-rates.ts). */
const measure = (engine: StreamEngine): Promise<StreamRates> =>
  streamRates(engine, syntheticPrompts(streams, promptTokens), decodeTokens);

type Arm = keyof typeof arms;
type Order = readonly Arm[];
/** Set in a block's own process: the block's order of trials, e.g. "before,after,after,before". */
const BLOCK_ENV = "BRINGUP_BENCH_BLOCK_ORDER";

/** One block in this process: both arms' engines built (in the order's first two), warmed, measured in order. */
async function runBlock(order: Order): Promise<Record<Arm, StreamRates[]>> {
  const engines = {} as Record<Arm, InstanceType<EngineModule["Engine"]>>;
  for (const name of order.slice(0, 2) as Arm[]) {
    const m = arms[name];
    const model = await m.createTinyModel(m.findTinySize(args.size as string), { seed: 1 });
    engines[name] = new m.Engine(model, {
      threads,
      maxNumSeqs: streams,
      maxModelLen: promptTokens + decodeTokens + 8,
    });
    await measure(engines[name]); // warm-up: kernels compiled, JIT warm
  }
  const got: Record<Arm, StreamRates[]> = { before: [], after: [] };
  for (const name of order) got[name].push(await measure(engines[name]));
  for (const engine of Object.values(engines)) await engine.close();
  return got;
}

/** One block in a process of its own (this script, BLOCK_ENV set), its rates sent back. */
function blockInChild(order: Order): Promise<Record<Arm, StreamRates[]>> {
  return new Promise((resolveBlock, reject) => {
    const child = fork(process.argv[1] as string, process.argv.slice(2), {
      env: { ...process.env, [BLOCK_ENV]: order.join(",") },
      execArgv: process.execArgv,
    });
    let got: Record<Arm, StreamRates[]> | undefined;
    child.on("message", (message) => {
      got = message as Record<Arm, StreamRates[]>;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      got === undefined
        ? reject(new Error(`a block's process exited with ${code} and no rates`))
        : resolveBlock(got),
    );
  });
}

const childOrder = process.env[BLOCK_ENV];
if (childOrder !== undefined) {
  (process.send as (message: unknown) => void)(await runBlock(childOrder.split(",") as Arm[]));
  process.exit(0);
}

const KEYS = ["prefill", "decode", "prefillCpu", "decodeCpu"] as const;
const blocks = Object.fromEntries(KEYS.map((k) => [k, [] as BlockTrials[]])) as Record<
  (typeof KEYS)[number],
  BlockTrials[]
>;
console.log(
  `${args.size}: ${streams} stream${streams > 1 ? "s" : ""}, prompt ${promptTokens}, decode ${decodeTokens}, ${threads} threads, ${blockCount} blocks (ABBA, BAAB, ...; A before, B after)`,
);
const geometricMean = (xs: readonly number[]) =>
  Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
for (let b = 0; b < blockCount; b++) {
  const order: Order =
    b % 2 === 0 ? ["before", "after", "after", "before"] : ["after", "before", "before", "after"];
  const { before, after } = await blockInChild(order);
  const line: string[] = [];
  for (const k of KEYS) {
    const [gb, ga] = [geometricMean(before.map((r) => r[k])), geometricMean(after.map((r) => r[k]))];
    blocks[k].push({ a: [gb], b: [ga] });
    line.push(`${k} ${gb.toFixed(1)} -> ${ga.toFixed(1)} (${(ga / gb).toFixed(3)}x)`);
  }
  console.log(
    `block ${b + 1} (${order.map((n) => (n === "before" ? "A" : "B")).join("")}): ${line.join(", ")}`,
  );
}
console.log("tok/s of wall time (prefill, decode) and tok per CPU-second (prefillCpu, decodeCpu)");
for (const key of KEYS) {
  const { estimate, low, high, df } = blockedRatioInterval(blocks[key]);
  console.log(
    `${key} after/before: ${estimate.toFixed(3)}x, 95% interval ${low.toFixed(3)}x to ${high.toFixed(3)}x (df ${df}): ${abVerdict([low, high])}`,
  );
}
