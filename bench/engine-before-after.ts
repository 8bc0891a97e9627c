/**
 * What a change to the engine costs: the same tiny model's prefill and decode on this tree's engine
 * (built, dist/) and on another checkout's (--before DIR, built with `npx tsc -p
 * tsconfig.build.json`), both loaded into one process and measured in balanced blocks: ABBA, then
 * BAAB, alternating, so neither the machine's drift nor which engine runs first in a block falls on
 * one arm. Each block's after/before ratio is printed; then, per figure, the after/before ratio
 * with its 95% interval (blockedRatioInterval, src/bench/stats.ts: trials compared within their
 * block on log values) and the verdict abVerdict gives it (no-difference, noisy or shown). Figures:
 * tokens per second of wall time and per CPU-second of the process (all threads), which a loaded
 * machine disturbs less than wall time. With --streams N, N requests are submitted together: prefill
 * runs until every stream has its first token, decode from then to the last token, counting every
 * stream's tokens (the aggregate rate of N streams all decoding).
 *
 *   git worktree add /tmp/before <commit> && (cd /tmp/before && ln -s "$PWD/node_modules" . && npx tsc -p tsconfig.build.json)
 *   npm run build && npx tsx bench/engine-before-after.ts --before /tmp/before [--size bench-100m]
 *     [--prompt 512] [--decode 32] [--blocks 6] [--threads 2] [--streams 1]
 */
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/stats.js";
import { abVerdict } from "../src/records/interval.js";
import { benchArgs } from "./args.js";

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
  Engine: new (
    model: unknown,
    options: object,
  ) => {
    submit(request: object): AsyncIterable<{ token?: { tokenId: number } }>;
    close(): Promise<void>;
  };
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

interface Rates {
  prefill: number;
  decode: number;
  /** Tokens per CPU-second of the whole process. */
  prefillCpu: number;
  decodeCpu: number;
}

const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/**
 * Prefill (until every stream has its first token) and decode (from then to the last token, every
 * stream's tokens) rates of `streams` requests submitted together.
 */
async function measure(engine: InstanceType<EngineModule["Engine"]>): Promise<Rates> {
  const start = performance.now();
  const cpuStart = cpuSeconds();
  let cpuFirst = 0;
  let first = 0;
  let last = 0;
  let started = 0;
  let decoded = 0;
  await Promise.all(
    Array.from({ length: streams }, async (_, s) => {
      const prompt = Array.from({ length: promptTokens }, (_, i) => 3 + ((i * 7919 + s * 31) % 2000));
      let n = 0;
      for await (const out of engine.submit({
        promptTokenIds: prompt,
        maxTokens: decodeTokens,
        ignoreEos: true,
        sampling: { temperature: 0 },
      })) {
        if (!out.token) continue;
        last = performance.now();
        if (n++ > 0) decoded++;
        else if (++started === streams) {
          first = last;
          cpuFirst = cpuSeconds();
          decoded = 0;
        }
      }
    }),
  );
  const cpuLast = cpuSeconds();
  return {
    prefill: (streams * promptTokens) / ((first - start) / 1000),
    decode: decoded / ((last - first) / 1000),
    prefillCpu: (streams * promptTokens) / (cpuFirst - cpuStart),
    decodeCpu: decoded / (cpuLast - cpuFirst),
  };
}

const engines = await Promise.all(
  (["before", "after"] as const).map(async (name) => {
    const m = arms[name];
    const model = await m.createTinyModel(m.findTinySize(args.size as string), { seed: 1 });
    const engine = new m.Engine(model, {
      threads,
      maxNumSeqs: streams,
      maxModelLen: promptTokens + decodeTokens + 8,
    });
    await measure(engine); // warm-up: kernels compiled, JIT warm
    return { name, engine };
  }),
);

const KEYS = ["prefill", "decode", "prefillCpu", "decodeCpu"] as const;
const blocks = Object.fromEntries(KEYS.map((k) => [k, [] as BlockTrials[]])) as Record<
  (typeof KEYS)[number],
  BlockTrials[]
>;
console.log(
  `${args.size}: ${streams} stream${streams > 1 ? "s" : ""}, prompt ${promptTokens}, decode ${decodeTokens}, ${threads} threads, ${blockCount} blocks (ABBA, BAAB, ...; A before, B after)`,
);
const byName = Object.fromEntries(engines.map(({ name, engine }) => [name, engine]));
const geometricMean = (xs: readonly number[]) =>
  Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
for (let b = 0; b < blockCount; b++) {
  const order = b % 2 === 0 ? ["before", "after", "after", "before"] : ["after", "before", "before", "after"];
  const got: Record<string, Rates[]> = { before: [], after: [] };
  for (const name of order)
    got[name]?.push(await measure(byName[name] as InstanceType<EngineModule["Engine"]>));
  const before = got.before as Rates[];
  const after = got.after as Rates[];
  const line: string[] = [];
  for (const k of KEYS) {
    const trials = { a: before.map((r) => r[k]), b: after.map((r) => r[k]) };
    blocks[k].push(trials);
    const [gb, ga] = [geometricMean(trials.a), geometricMean(trials.b)];
    line.push(`${k} ${gb.toFixed(1)} -> ${ga.toFixed(1)} (${(ga / gb).toFixed(3)}x)`);
  }
  console.log(
    `block ${b + 1} (${order.map((n) => (n === "before" ? "A" : "B")).join("")}): ${line.join(", ")}`,
  );
}
for (const { engine } of engines) await engine.close();
console.log("tok/s of wall time (prefill, decode) and tok per CPU-second (prefillCpu, decodeCpu)");
for (const key of KEYS) {
  const { estimate, low, high, df } = blockedRatioInterval(blocks[key]);
  console.log(
    `${key} after/before: ${estimate.toFixed(3)}x, 95% interval ${low.toFixed(3)}x to ${high.toFixed(3)}x (df ${df}): ${abVerdict([low, high])}`,
  );
}
