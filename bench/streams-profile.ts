/**
 * Where a many-stream decode step's time goes: N streams (--streams) of a tiny model decode together
 * on this tree's built engine (dist/), first timed (--rounds, decode tok/s of wall time), then once
 * more under V8's sampling profiler (100 µs) on the calling thread, from the moment every stream
 * decodes. The profile is written to --profile PATH, and each function's share of the calling
 * thread's samples printed: in total (anywhere on the stack: the step's parts, e.g. attention
 * against the matmuls) and self. The pool's helper threads are not sampled; the calling thread's
 * waits for them show as their own frames (pool.ts's run, wait-for-units.ts).
 *
 * With --breakdown, one more round splits the calling thread's wall time per decode step (from
 * when every stream decodes) by pool call (pool-timings.ts): each matmul shape with its flop rate,
 * gate/up with SwiGLU, attention, and what runs outside the pool (norms, RoPE, KV writes, sampling,
 * the engine's loop). At --threads 1 that is each part's work alone; at 2, beside it, how much of
 * that the helper took off the calling thread.
 *
 *   npx tsc -p tsconfig.build.json && npx tsx bench/streams-profile.ts [--size bench-100m]
 *     [--streams 16] [--prompt 512] [--decode 32] [--threads 2] [--rounds 3] [--profile PATH]
 *     [--breakdown]
 */
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { benchArgs } from "./args.js";
import { timePoolCalls } from "./pool-timings.js";
import { streamRates, syntheticPrompts } from "./stream-rates.js";

const args = benchArgs(import.meta.url, {
  size: { type: "string", default: "bench-100m" },
  streams: { type: "string", default: "16" },
  prompt: { type: "string", default: "512" },
  decode: { type: "string", default: "32" },
  threads: { type: "string", default: "2" },
  rounds: { type: "string", default: "3" },
  profile: { type: "string" },
  breakdown: { type: "boolean", default: false },
});
const [streams, promptTokens, decodeTokens] = [
  Number(args.streams),
  Number(args.prompt),
  Number(args.decode),
];

const built = (path: string) => pathToFileURL(join(import.meta.dirname, "..", "dist/src/engine", path)).href;
const engineModule = (await import(built("index.js"))) as typeof import("../src/engine/index.js");
const { Engine, createTinyModel, findTinySize } = engineModule;
const size = findTinySize(args.size as string);
if (size === undefined) throw new Error(`no tiny size ${args.size}`);
const model = await createTinyModel(size, { seed: 1 });
const engine = new Engine(model, {
  threads: Number(args.threads),
  maxNumSeqs: streams,
  maxModelLen: promptTokens + decodeTokens + 8,
});

const decodeRate = async (onDecode?: () => void) =>
  (await streamRates(engine, syntheticPrompts(streams, promptTokens), decodeTokens, onDecode)).decode;

await decodeRate(); // warm-up
const rates: number[] = [];
for (let r = 0; r < Number(args.rounds); r++) rates.push(await decodeRate());
console.log(
  `${args.size}: ${streams} streams, prompt ${promptTokens}, decode ${decodeTokens}, ${args.threads} threads: decode tok/s ${rates.map((r) => r.toFixed(1)).join(", ")}`,
);

if (args.profile !== undefined) {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  // Sampling starts once every stream decodes, so prefill stays out of the profile.
  await decodeRate(() => void session.post("Profiler.start"));
  const { profile } = await session.post("Profiler.stop");
  session.disconnect();
  await writeFile(args.profile, JSON.stringify(profile));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map(profile.nodes.flatMap((n) => (n.children ?? []).map((c) => [c, n.id] as const)));
  const nameOf = (id: number) => {
    const frame = nodes.get(id)?.callFrame;
    return `${frame?.functionName || "(anonymous)"} ${frame?.url.split("/").at(-1) ?? ""}`;
  };
  // Per function, the samples it is the leaf of (self) and those it is anywhere on the stack of (total).
  const shares = new Map<string, { self: number; total: number }>();
  const share = (name: string) => {
    const known = shares.get(name);
    if (known !== undefined) return known;
    const fresh = { self: 0, total: 0 };
    shares.set(name, fresh);
    return fresh;
  };
  const samples = profile.samples ?? [];
  for (const leaf of samples) {
    share(nameOf(leaf)).self++;
    const seen = new Set<string>();
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) seen.add(nameOf(id));
    for (const name of seen) share(name).total++;
  }
  const pct = (n: number) => `${((100 * n) / samples.length).toFixed(1).padStart(5)}%`;
  console.log(
    `profile written to ${args.profile}; by total share (self beside it), of ${samples.length} samples:`,
  );
  for (const [name, { self, total }] of [...shares].sort((a, b) => b[1].total - a[1].total).slice(0, 40))
    console.log(`${pct(total)} ${pct(self)}  ${name}`);
}
if (args.breakdown) {
  // Wrapped only now, so the timed rounds and the profile run the pool as it is.
  const poolModule = (await import(
    built("kernels/pool.js")
  )) as typeof import("../src/engine/kernels/pool.js");
  const poolCalls = timePoolCalls(poolModule.MatmulPool);
  let steps = 0;
  const stopCounting = engine.onStep(() => {
    if (poolCalls.on) steps++;
  });
  let start = 0;
  let cpuStart = process.cpuUsage();
  await decodeRate(() => {
    poolCalls.on = true;
    start = performance.now();
    cpuStart = process.cpuUsage();
  });
  const wall = performance.now() - start;
  const { user, system } = process.cpuUsage(cpuStart);
  poolCalls.on = false;
  stopCounting();
  const perStep = (ms: number) => `${(ms / steps).toFixed(2).padStart(6)} ms`;
  const share = (ms: number) => `${((100 * ms) / wall).toFixed(1).padStart(5)}%`;
  console.log(
    `breakdown of ${steps} decode steps, ${perStep(wall)} a step of the calling thread's wall time (CPU time of all threads: ${perStep((user + system) / 1000)}):`,
  );
  let inPool = 0;
  for (const [key, { calls, ms, flops }] of [...poolCalls.times].sort((a, b) => b[1].ms - a[1].ms)) {
    inPool += ms;
    const rate = flops > 0 ? `, ${(flops / ms / 1e6).toFixed(1)} GFLOP/s` : "";
    console.log(
      `${perStep(ms)} ${share(ms)}  ${key}: ${(calls / steps).toFixed(0)} a step, ${((1000 * ms) / calls).toFixed(0)} us each${rate}`,
    );
  }
  console.log(`${perStep(wall - inPool)} ${share(wall - inPool)}  outside the pool`);
}
await engine.close();
