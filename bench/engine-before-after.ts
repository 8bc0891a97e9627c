/**
 * What a change to the engine costs: the same tiny model's prefill and decode on this tree's engine
 * (built, dist/) and on another checkout's (--before DIR, built with `npx tsc -p
 * tsconfig.build.json`), both loaded into one process and measured in alternating order (ABBA) over
 * several rounds, so the machine's drift falls on both alike. Each round's after/before ratio is
 * printed, then their median and range.
 *
 *   git worktree add /tmp/before <commit> && (cd /tmp/before && ln -s "$PWD/node_modules" . && npx tsc -p tsconfig.build.json)
 *   npm run build && npx tsx bench/engine-before-after.ts --before /tmp/before [--size bench-100m]
 *     [--prompt 512] [--decode 32] [--rounds 4] [--threads 2]
 */
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    before: { type: "string" },
    size: { type: "string", default: "bench-100m" },
    prompt: { type: "string", default: "512" },
    decode: { type: "string", default: "32" },
    rounds: { type: "string", default: "4" },
    threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
  },
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

/** Prefill tok/s (to the first token) and decode tok/s (first token to last) of one request. */
async function measure(engine: InstanceType<EngineModule["Engine"]>) {
  const prompt = Array.from({ length: promptTokens }, (_, i) => 3 + ((i * 7919) % 2000));
  const start = performance.now();
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
    if (n === 0) first = last;
    n++;
  }
  return { prefill: promptTokens / ((first - start) / 1000), decode: (n - 1) / ((last - first) / 1000) };
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

const ratios = { prefill: [] as number[], decode: [] as number[] };
console.log(
  `${args.size}: prompt ${promptTokens}, decode ${decodeTokens}, ${threads} threads, ${rounds} ABBA rounds`,
);
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? engines : [...engines].reverse();
  const got: Record<string, { prefill: number; decode: number }> = {};
  for (const { name, engine } of order) got[name] = await measure(engine);
  const before = got.before as { prefill: number; decode: number };
  const after = got.after as { prefill: number; decode: number };
  ratios.prefill.push(after.prefill / before.prefill);
  ratios.decode.push(after.decode / before.decode);
  console.log(
    `round ${r + 1}: prefill ${before.prefill.toFixed(1)} -> ${after.prefill.toFixed(1)} tok/s (${(after.prefill / before.prefill).toFixed(3)}x), decode ${before.decode.toFixed(2)} -> ${after.decode.toFixed(2)} tok/s (${(after.decode / before.decode).toFixed(3)}x)`,
  );
}
for (const { engine } of engines) await engine.close();
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
for (const key of ["prefill", "decode"] as const) {
  const xs = ratios[key];
  console.log(
    `${key} after/before: median ${median(xs).toFixed(3)}x, range ${Math.min(...xs).toFixed(3)}x to ${Math.max(...xs).toFixed(3)}x`,
  );
}
