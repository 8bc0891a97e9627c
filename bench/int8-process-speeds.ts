/**
 * How fast the integer MXFP4 arm of bench/moe-expert-paths.ts decodes in each of many fresh
 * processes, and whether a set of node/V8 flags moves that: the same code has run at two speeds
 * ~10% apart from one process to the next (issue 28), so a single process's figure says little.
 *
 * The parent writes the MoE bench's MXFP4 model (MiniMax-M3's kit at that bench's default sizes,
 * seed 0) to a temporary checkpoint once, then starts --processes pairs of children, one with
 * --flags-a and one with --flags-b (the pair's order alternating); each child loads the checkpoint,
 * makes --engines int8 engines over it on --threads threads (each its own pool, scratch and KV
 * cache; the weights and compiled kernels are the process's), decodes one warm-up request on each
 * and then --rounds requests of --decode tokens, the engines taking turns, and reports each
 * engine's median tok/s (first token to last, wall) and tok per CPU-s of the process. Printed:
 * each process's engines, each arm's spread over processes (min, median, max of a process's
 * engines' geometric mean), and b / a with its 95% interval (pairs as blocks). With no --flags-b
 * only the a arm runs, for the spread alone. Flags take the `=` form: --flags-b=--no-liftoff.
 *
 * --before DIR makes arm a another checkout's engine (DIR's copy of this script runs its
 * children, so DIR must have it and its kernels built) and arm b this tree's, both with --flags-a
 * unless --flags-b is given: a change measured as process pairs rather than within one process.
 *
 *   npx tsx bench/int8-process-speeds.ts [--processes 8] [--engines 1] [--flags-a=""] [--flags-b="--no-liftoff"] [--before DIR]
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { median } from "simple-statistics";
import { blockedRatioInterval } from "../src/bench/index.js";
import { Engine, loadModel, readCorpus, writeTinyModel } from "../src/engine/index.js";
import { minimaxTinyModel } from "../src/engine/models/minimax-m3.js";
import { benchArgs } from "./args.js";
import { MOE_BENCH_SIZES, moeBenchConfig } from "./moe-bench-config.js";
import { streamRates } from "./stream-rates.js";

const args = benchArgs(import.meta.url, {
  processes: { type: "string", default: "8" },
  "flags-a": { type: "string", default: "" },
  "flags-b": { type: "string" },
  before: { type: "string" },
  threads: { type: "string", default: "1" },
  rounds: { type: "string", default: "6" },
  decode: { type: "string", default: "32" },
  engines: { type: "string", default: "1" },
  child: { type: "string" },
});
const [processes, threads, rounds, decodeLen] = [args.processes, args.threads, args.rounds, args.decode].map(
  Number,
) as [number, number, number, number];

interface Speed {
  readonly rate: number;
  readonly cpuRate: number;
}

/** One child's decodes on each of `engines` int8 engines over one model: a warm-up each, then the median of `rounds` requests, the engines taking turns. */
async function childSpeeds(dir: string, engines: number): Promise<Speed[]> {
  const corpus = await readCorpus();
  const model = await loadModel(dir);
  const made = Array.from(
    { length: engines },
    () =>
      new Engine(model, {
        threads,
        maxNumSeqs: 1,
        maxModelLen: 512,
        kvCacheBytes: 64 << 20,
        switches: { mxfp4: "int8" },
      }),
  );
  try {
    for (const engine of made)
      if (engine.kernels.mxfp4 !== "int8") throw new Error(`the engine runs ${engine.kernels.mxfp4} kernels`);
    const prompt = model.tokenizer.encode(corpus.slice(0, 4000)).slice(0, 16);
    // A request's decode rates, first token to last (stream-rates.ts, one stream).
    const decode = async (engine: Engine): Promise<Speed> => {
      const { decode: rate, decodeCpu: cpuRate } = await streamRates(engine, [prompt], decodeLen);
      return { rate, cpuRate };
    };
    for (const engine of made) await decode(engine);
    const runs: Speed[][] = made.map(() => []);
    for (let r = 0; r < rounds; r++)
      for (let e = 0; e < engines; e++) {
        const i = (e + r) % engines;
        (runs[i] as Speed[]).push(await decode(made[i] as Engine));
      }
    return runs.map((speeds) => ({
      rate: median(speeds.map((s) => s.rate)),
      cpuRate: median(speeds.map((s) => s.cpuRate)),
    }));
  } finally {
    await Promise.all(made.map((engine) => engine.close()));
  }
}

const run = promisify(execFile);
const script = fileURLToPath(import.meta.url);

/** An arm: its name, its node flags, and the copy of this script its children run. */
interface Arm {
  readonly name: string;
  readonly flags: string;
  readonly script: string;
}

/** A fresh node process with the arm's flags running its script's child half. */
async function spawnChild(dir: string, { flags, script }: Arm): Promise<Speed[]> {
  const v8 = flags.split(/\s+/).filter((f) => f !== "");
  const passed = ["--threads", String(threads), "--rounds", String(rounds), "--decode", String(decodeLen)];
  passed.push("--engines", args.engines);
  const { stdout } = await run(
    process.execPath,
    [...v8, "--import", "tsx", script, "--child", dir, ...passed],
    {
      maxBuffer: 1 << 20,
    },
  );
  return JSON.parse(stdout.trim().split("\n").at(-1) as string) as Speed[];
}

if (args.child !== undefined) {
  process.stdout.write(`${JSON.stringify(await childSpeeds(args.child, Number(args.engines)))}\n`);
} else {
  const parent = await mkdtemp(join(tmpdir(), "bringup-int8-speeds-"));
  const dir = join(parent, "mxfp4");
  try {
    const corpus = await readCorpus();
    await writeTinyModel(dir, minimaxTinyModel(moeBenchConfig(MOE_BENCH_SIZES), corpus, { seed: 0 }));
    const before = args.before;
    const flagsB = args["flags-b"] ?? (before === undefined ? undefined : args["flags-a"]);
    /** An arm of `flags`, run by this tree, or by `tree`'s copy of this script. */
    const arm = (flags: string, tree?: string): Arm => ({
      name: [tree ?? (before === undefined ? "" : "this tree"), flags || "no flags"]
        .filter((n) => n !== "")
        .join(", "),
      flags,
      script: tree === undefined ? script : join(tree, "bench", "int8-process-speeds.ts"),
    });
    const arms = [arm(args["flags-a"], before), ...(flagsB === undefined ? [] : [arm(flagsB)])];
    const speeds: Speed[][] = arms.map(() => []);
    process.stdout.write(
      `int8 MXFP4 decode, ${threads} thread(s), ${rounds} x ${decodeLen} tokens a process after a warm-up; load ${loadavg()[0]?.toFixed(2)}\n`,
    );
    for (let p = 0; p < processes; p++) {
      const order = arms.map((_, i) => (i + p) % arms.length);
      const line: string[] = [];
      for (const i of order) {
        const engines = await spawnChild(dir, arms[i] as Arm);
        // A process's speed: its engines' geometric mean.
        const mean = (key: keyof Speed) =>
          Math.exp(engines.reduce((t, e) => t + Math.log(e[key]), 0) / engines.length);
        (speeds[i] as Speed[]).push({ rate: mean("rate"), cpuRate: mean("cpuRate") });
        const each = engines.map((e) => `${e.rate.toFixed(1)} (${e.cpuRate.toFixed(1)}/CPU-s)`).join(" ");
        line.push(`[${(arms[i] as Arm).name}] ${each} tok/s`);
      }
      process.stdout.write(`pair ${p + 1}: ${line.join(", ")}; load ${loadavg()[0]?.toFixed(2)}\n`);
    }
    arms.forEach(({ name }, i) => {
      const rates = (speeds[i] as Speed[]).map((s) => s.rate).sort((a, b) => a - b);
      process.stdout.write(
        `[${name}] tok/s over ${rates.length} processes: min ${rates[0]?.toFixed(1)}, median ${median(rates).toFixed(1)}, max ${rates.at(-1)?.toFixed(1)}\n`,
      );
    });
    if (arms.length === 2) {
      const [a, b] = speeds as [Speed[], Speed[]];
      for (const key of ["rate", "cpuRate"] as const) {
        const interval = blockedRatioInterval(a.map((s, p) => ({ a: [s[key]], b: [(b[p] as Speed)[key]] })));
        process.stdout.write(
          `b / a (${key === "rate" ? "tok/s" : "tok per CPU-s"}): ${interval.estimate.toFixed(3)}x [${interval.low.toFixed(3)}, ${interval.high.toFixed(3)}]\n`,
        );
      }
    }
  } finally {
    await rm(parent, { recursive: true, force: true });
  }
}
