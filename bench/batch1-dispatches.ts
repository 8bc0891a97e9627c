/**
 * Where a batch-1 decode token's time goes on the engine's pool: per token, how many dispatches
 * (MatmulPool.run) by kernel, the time inside them, the share of their units the calling thread ran
 * itself (a helper that wakes late leaves its share to the caller), the weight bytes the matmul
 * dispatches read and at what rate, and the time outside any dispatch (the calling thread's own
 * kernels and JavaScript). It wraps the pool's `run` with a copy that counts the caller's units, so
 * it measures the same code path with a few timer reads more a dispatch.
 *
 * With --streams N, N streams decode at once and the figures are per step (one token of each),
 * counted from when every stream has its first token (bench/stream-rates.ts).
 *
 *   npx tsx bench/batch1-dispatches.ts [--size bench-100m] [--threads 2] [--decode 64] [--rounds 3] [--streams 1]
 */
import { createTinyModel, Engine, findTinySize } from "../src/engine/index.js";
import { CONTROL, claimUnits } from "../src/engine/kernels/kernel-thread.js";
import type { MatmulJob } from "../src/engine/kernels/matmul/matmul-job.js";
import { MatmulPool } from "../src/engine/kernels/pool.js";
import { claimsAhead, type JobMessage, runUnit } from "../src/engine/kernels/registry.js";
import { waitForUnits } from "../src/engine/kernels/wait-for-units.js";
import { benchArgs } from "./args.js";
import { streamRates, syntheticPrompts } from "./stream-rates.js";

const args = benchArgs(import.meta.url, {
  size: { type: "string", default: "bench-100m" },
  threads: { type: "string", default: "2" },
  decode: { type: "string", default: "64" },
  rounds: { type: "string", default: "3" },
  streams: { type: "string", default: "1" },
});

interface Tally {
  calls: number;
  ms: number;
  units: number;
  callerUnits: number;
  bytes: number;
  /** ms posting the job, notifying the helpers, running the caller's units, waiting for the helpers' */
  post: number;
  notify: number;
  work: number;
  wait: number;
}
const tallies = new Map<string, Tally>();
let counting = false;

/** The pool's internals this copy of `run` touches. */
interface PoolInside {
  ctrl: Int32Array;
  workers: { port: import("node:worker_threads").MessagePort }[];
  thread: Parameters<typeof runUnit>[0];
  arena: { memory: { buffer: ArrayBufferLike } } | null;
}

/** Weight bytes of a matmul dispatch: f32 rows of K floats (bench-100m's weights are f32). */
function matmulBytes(kernel: string, params: unknown): number {
  if (kernel !== "matmul" && kernel !== "matmulSwiglu") return 0;
  const job = params as MatmulJob;
  return job.totalRows * job.K * 4;
}

MatmulPool.prototype.run = function run(this: unknown, kernel, params, units, writeInputs) {
  const pool = this as PoolInside;
  const t0 = performance.now();
  const base = Atomics.load(pool.ctrl, CONTROL.NEXT);
  const finishedBase = Atomics.load(pool.ctrl, CONTROL.FINISHED);
  const memoryBytes = pool.arena?.memory.buffer.byteLength ?? 0;
  const gated = writeInputs !== undefined;
  const job = { type: "job", kernel, params, base, units, memoryBytes, gated } as JobMessage;
  for (const { port } of pool.workers) port.postMessage(job);
  const t1 = performance.now();
  Atomics.add(pool.ctrl, CONTROL.SEQ, 1);
  Atomics.notify(pool.ctrl, CONTROL.SEQ);
  if (gated) {
    writeInputs();
    Atomics.store(pool.ctrl, CONTROL.READY, base);
    Atomics.notify(pool.ctrl, CONTROL.READY);
  }
  const t2 = performance.now();
  let mine = 0;
  const run = (unit: number, next: number) => {
    mine++;
    runUnit(pool.thread, job, unit, next);
  };
  claimUnits(pool.ctrl, base, units, run, claimsAhead(job));
  const t3 = performance.now();
  waitForUnits(pool.ctrl, pool.workers, finishedBase + units);
  const t4 = performance.now();
  if (!counting) return;
  const shape = (params as Partial<MatmulJob>).totalRows;
  const key = shape === undefined ? kernel : `${kernel} ${shape}x${(params as MatmulJob).K}`;
  const tally = tallies.get(key) ?? {
    calls: 0,
    ms: 0,
    units: 0,
    callerUnits: 0,
    bytes: 0,
    post: 0,
    notify: 0,
    work: 0,
    wait: 0,
  };
  tally.calls++;
  tally.ms += t4 - t0;
  tally.post += t1 - t0;
  tally.notify += t2 - t1;
  tally.work += t3 - t2;
  tally.wait += t4 - t3;
  tally.units += units;
  tally.callerUnits += mine;
  tally.bytes += matmulBytes(kernel, params);
  tallies.set(key, tally);
};

const size = findTinySize(args.size as string);
if (size === undefined) throw new Error(`no tiny size ${args.size}`);
const model = await createTinyModel(size, { seed: 1 });
const decodeTokens = Number(args.decode);
const streams = Number(args.streams);
if (!(Number.isInteger(streams) && streams >= 1)) throw new Error("--streams must be a positive integer");
const engine = new Engine(model, {
  threads: Number(args.threads),
  maxNumSeqs: streams,
  maxModelLen: 16 + decodeTokens + 8,
});

/** Decodes `streams` streams at once (streamRates): steps, and their time, while every stream decodes. */
async function decode(): Promise<{ tokens: number; ms: number }> {
  const rates = await streamRates(engine, syntheticPrompts(streams, 16), decodeTokens, () => {
    counting = true;
  });
  counting = false;
  const steps = (rates.tokens[0] as number[]).length - 1;
  return { tokens: steps, ms: ((steps * streams) / rates.decode) * 1000 };
}

/** What the figures are per: a token at one stream, a step (a token of each) at several. */
const unit = streams > 1 ? "step" : "token";
await decode(); // warm-up
for (let round = 1; round <= Number(args.rounds); round++) {
  tallies.clear();
  const { tokens, ms } = await decode();
  const perToken = (x: number) => (x / tokens).toFixed(3);
  let inside = 0;
  const lines = [...tallies].map(([kernel, t]) => {
    inside += t.ms;
    const rate = t.bytes > 0 ? `, ${(t.bytes / (t.ms / 1000) / 1e9).toFixed(1)} GB/s of weights inside` : "";
    return `  ${kernel}: ${perToken(t.calls)} dispatches/${unit}, ${perToken(t.ms)} ms/${unit}, ${(t.units / t.calls).toFixed(1)} units each, caller ran ${((100 * t.callerUnits) / t.units).toFixed(0)}%${rate}; ms/${unit} post ${perToken(t.post)}, notify ${perToken(t.notify)}, caller's units ${perToken(t.work)}, wait ${perToken(t.wait)}`;
  });
  process.stdout.write(
    `round ${round}: ${(tokens / (ms / 1000)).toFixed(1)} ${unit}s/s, ${perToken(ms)} ms/${unit}, ${perToken(inside)} inside dispatches, ${perToken(ms - inside)} outside\n${lines.join("\n")}\n`,
  );
}
await engine.close();
