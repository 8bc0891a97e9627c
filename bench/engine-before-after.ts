/**
 * What a change to the engine costs: the same tiny model's prefill and decode on this tree's engine
 * (built, dist/) and on another checkout's (--before DIR, built with `npx tsc -p
 * tsconfig.build.json`), both loaded into one process and measured in alternating order (ABBA) over
 * several rounds, so the machine's drift falls on both alike. Each round's after/before ratio is
 * printed, then their median and range, in wall time and in the process's CPU time (all threads),
 * which a loaded machine disturbs less than wall time.
 *
 *   git worktree add /tmp/before <commit> && (cd /tmp/before && ln -s "$PWD/node_modules" . && npx tsc -p tsconfig.build.json)
 *   npm run build && npx tsx bench/engine-before-after.ts --before /tmp/before [--size bench-100m]
 *     [--prompt 512] [--decode 32] [--rounds 4] [--threads 2]
 */
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  before: { type: "string" },
  size: { type: "string", default: "bench-100m" },
  prompt: { type: "string", default: "512" },
  decode: { type: "string", default: "32" },
  rounds: { type: "string", default: "4" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
});
if (args.before === undefined) throw new Error("pass --before DIR: a built checkout to compare against");
const promptTokens = Number(args.prompt);
const decodeTokens = Number(args.decode);
const rounds = Number(args.rounds);
const threads = Number(args.threads);

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

/** Prefill (to the first token) and decode (first token to last) rates of one request. */
async function measure(engine: InstanceType<EngineModule["Engine"]>): Promise<Rates> {
  const prompt = Array.from({ length: promptTokens }, (_, i) => 3 + ((i * 7919) % 2000));
  const start = performance.now();
  const cpuStart = cpuSeconds();
  let cpuFirst = 0;
  let first = 0;
  let last = 0;
  let n = 0;
  for await (const out of engine.submit({
    promptTokenIds: prompt,
    maxTokens: decodeTokens,
    ignoreEos: true,
    sampling: { temperature: 0 },
  })) {
    if (!out.token) continue;
    last = performance.now();
    if (n === 0) {
      first = last;
      cpuFirst = cpuSeconds();
    }
    n++;
  }
  const cpuLast = cpuSeconds();
  return {
    prefill: promptTokens / ((first - start) / 1000),
    decode: (n - 1) / ((last - first) / 1000),
    prefillCpu: promptTokens / (cpuFirst - cpuStart),
    decodeCpu: (n - 1) / (cpuLast - cpuFirst),
  };
}

const engines = await Promise.all(
  (["before", "after"] as const).map(async (name) => {
    const m = arms[name];
    const model = await m.createTinyModel(m.findTinySize(args.size as string), { seed: 1 });
    const engine = new m.Engine(model, {
      threads,
      maxNumSeqs: 1,
      maxModelLen: promptTokens + decodeTokens + 8,
    });
    await measure(engine); // warm-up: kernels compiled, JIT warm
    return { name, engine };
  }),
);

const KEYS = ["prefill", "decode", "prefillCpu", "decodeCpu"] as const;
const ratios = Object.fromEntries(KEYS.map((k) => [k, [] as number[]])) as Record<
  (typeof KEYS)[number],
  number[]
>;
console.log(
  `${args.size}: prompt ${promptTokens}, decode ${decodeTokens}, ${threads} threads, ${rounds} ABBA rounds`,
);
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? engines : [...engines].reverse();
  const got: Record<string, Rates> = {};
  for (const { name, engine } of order) got[name] = await measure(engine);
  const before = got.before as Rates;
  const after = got.after as Rates;
  for (const k of KEYS) ratios[k].push(after[k] / before[k]);
  console.log(
    `round ${r + 1}: ${KEYS.map((k) => `${k} ${before[k].toFixed(1)} -> ${after[k].toFixed(1)} (${(after[k] / before[k]).toFixed(3)}x)`).join(", ")}`,
  );
}
for (const { engine } of engines) await engine.close();
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
console.log("tok/s of wall time (prefill, decode) and tok per CPU-second (prefillCpu, decodeCpu)");
for (const key of KEYS) {
  const xs = ratios[key];
  console.log(
    `${key} after/before: median ${median(xs).toFixed(3)}x, range ${Math.min(...xs).toFixed(3)}x to ${Math.max(...xs).toFixed(3)}x`,
  );
}
