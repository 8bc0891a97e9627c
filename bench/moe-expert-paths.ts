/**
 * Decode at one stream of a gpt-oss-style MoE whose experts are far beyond the caches, on seven
 * expert paths of the same weights, measured in one process: FP8 experts (E4M3 with a scale per
 * 32 values, a chunk of rows decoded into scratch for the tile), FP8 experts with a scale per
 * 128x128 tile as real FP8 checkpoints have them (converted with --fp8-block tile128: power-of-two
 * tile scales, values rounded where a tile's blocks span too many binades) on fp8=exact and on
 * fp8=scaled (the input times each band's scales, no multiply a weight, each block's halves
 * summed apart: not the same bits, so its tokens are counted against fp8=exact's), fused MXFP4 (mxfp4=fused: the
 * same by its own SIMD kernel), unpacked MXFP4 (mxfp4=unpacked: each expert row dequantized to f32, then the ordinary
 * tile: the stock op), f32 experts, and integer MXFP4 (mxfp4=int8: the input quantized to int8 per
 * block of 32, relaxed integer dot products; not the same bits, so its tokens are counted against
 * the fused arm's rather than required to match).
 *
 * The model is MiniMax-M3's tiny kit (ports/minimax-m3/model.ts) at a larger size, made in memory
 * from a fixed seed, its experts in MXFP4 as the port writes them; the f32 arm holds the same
 * values dequantized, and the FP8 arm is the checkpoint converted by `bringup weights convert`'s
 * code and loaded as `bringup serve` loads it. All four decode the same tokens.
 *
 * After a warm-up round the arms alternate over rounds (the order rotates and reverses from round
 * to round), each round printed (each arm named with its mxfp4 switch, each FP8 arm with its scale
 * layout and fp8 switch); then the 1-minute load
 * average before and after the rounds, and each arm's median
 * (tokens per wall second, and per second of the process's CPU time over the same span: an arm
 * that loses the core to other load is not counted slower for it; llama.cpp's thread is this
 * process's too), the weight bytes it reads per token
 * (expert tensors at top-k of the experts, the rest whole, the embedding's one row left out), the
 * roofline those bytes give at the read bandwidth the same threads reach together (measured in
 * this run), the garbage collections (full ones apart, with their pauses) that started inside each
 * arm's timed decodes, and the ratios between arms with 95% intervals (rounds as blocks).
 *
 * With --llama-cpp a fifth arm is llama.cpp (through node-llama-cpp, installed on first use into
 * .cache/bench-deps/) on the same weights: the checkpoint written as a GGUF of llama.cpp's gpt-oss
 * architecture with the experts in GGML's MXFP4 type (bench/gguf-gpt-oss.ts), on as many threads
 * unless --llama-threads says otherwise (where threads fill every core, ggml's spinning workers
 * contend with the node thread that samples and feeds each token).
 * Its greedy tokens are checked against the fused arm's before anything is timed, and printed
 * as how many of the first tokens agree (f32 sums in another order may part ways late).
 *
 * With --allocation each engine arm then decodes requests of 8 and 8 + --decode tokens, and the
 * growth of the heap and of ArrayBuffers over each (taken again where a garbage collection fell
 * inside) gives the bytes it allocates per decode token and per request besides.
 *
 * With --profile PATH the int8 arm then decodes once more under V8's sampling profiler (100 µs):
 * the profile is written to PATH, and each function's share of the samples printed (a
 * WebAssembly kernel shows as wasm-function[0] of its module's hash), leaving out the inspector's
 * own stopping of the profiler.
 *
 * --replay sets the engine arms' replay switch: on (the engine's default) replays planned decode
 * steps, their buffers reused from step to step as llama.cpp reuses its graph's; off allocates
 * them anew each step, for the garbage collector.
 *
 * --arms names the engine arms to time (default all five): with fewer, a round is short (the
 * unpacked arm alone takes seconds), so many rounds fit where one arm against another is the
 * question (e.g. `--arms int8 --llama-cpp --rounds 30`); ratios are printed between the arms run.
 *
 * --baseline DIR adds the integer arm of another checkout's engine (and its fused arm where the
 * fused arm is run; its src/ loaded from source as this one's is, its kernels built: `npm run
 * build:kernels` there), in the same rounds, so a change
 * to the engine is measured against its revision in one run. Both engines share one process, and
 * each keeps a speed of its own for the process's life (engine-before-after.ts), which falls on one
 * arm for the whole run: read a --baseline ratio over several runs, and from both trees (each as
 * the other's baseline), not from one. E.g.
 *   git archive main | tar -x -C /tmp/before && ln -s "$PWD/node_modules" /tmp/before/ &&
 *     (cd /tmp/before && npm run build:kernels)
 *
 *   npx tsx bench/moe-expert-paths.ts [--hidden 1024] [--intermediate 1024] [--experts 32] [--rounds 5] [--replay off] [--arms fused,int8] [--llama-cpp]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { median } from "simple-statistics";
import { blockedRatioInterval } from "../src/bench/index.js";
import {
  Engine,
  type HostTensor,
  type LoadedModel,
  loadModel,
  modelOfFiles,
  readCorpus,
  type TinyModelFiles,
  writeTinyModel,
} from "../src/engine/index.js";
import { minimaxArchitecture, minimaxTinyModel } from "../src/engine/models/minimax-m3.js";
import { convertCheckpoint, dequantizeMxfp4, openCheckpoint } from "../src/formats/index.js";
import { allocationOf, collectionsIn } from "./decode-garbage.js";
import { profileDecode } from "./decode-profile.js";
import { writeGptOssGguf } from "./gguf-gpt-oss.js";
import { memoryBandwidth } from "./memory-bandwidth.js";
import { MOE_BENCH_SIZES, moeBenchConfig } from "./moe-bench-config.js";
import { type Llama, type LlamaContext, type LlamaModel, nodeLlamaCpp } from "./node-llama-cpp.js";

const USAGE = `usage: npx tsx bench/moe-expert-paths.ts [options]
  --hidden N        hidden size (default 1024)
  --intermediate N  each expert's intermediate size (default 1024)
  --experts N       experts per layer (default 32)
  --top-k N         experts per token (default 8)
  --layers N        layers, sliding and full attention alternating (default 2)
  --threads N       matmul threads, and threads of the bandwidth measurement (default 2)
  --decode N        tokens decoded per trial (default 32)
  --rounds N        measured rounds, arms alternated, after one warm-up round (default 5)
  --replay on|off   the engine arms' replay switch: decode steps planned once and replayed, their
                    buffers reused (as llama.cpp reuses its graph's), or built anew (default on)
  --arms LIST       the engine arms timed, comma-separated from fp8,fp8-tile,fp8-scaled,fused,
                    unpacked,f32,int8 (default all; fp8 has 1x32 scale blocks, fp8-tile and
                    fp8-scaled 128x128 tiles on fp8=exact and fp8=scaled)
  --llama-cpp       add llama.cpp on the same MXFP4 weights as an arm
  --baseline DIR    add the integer (and fused) arm of the engine in checkout DIR (its kernels built)
  --llama-threads N llama.cpp's threads (default: --threads)
  --profile PATH    after the rounds, a CPU profile of the int8 arm decoding --decode tokens,
                    written to PATH (.cpuprofile) and summed by function
  --profile-arm KEY the arm --profile profiles instead of int8 (one of --arms)
  --allocation      after the rounds, the bytes each engine arm allocates per decode token and
                    per request (heap and ArrayBuffers, from requests of two lengths)
  --help            print this and exit
`;
const { values: args } = parseArgs({
  options: {
    hidden: { type: "string", default: String(MOE_BENCH_SIZES.hidden) },
    intermediate: { type: "string", default: String(MOE_BENCH_SIZES.intermediate) },
    experts: { type: "string", default: String(MOE_BENCH_SIZES.experts) },
    "top-k": { type: "string", default: String(MOE_BENCH_SIZES.topK) },
    layers: { type: "string", default: String(MOE_BENCH_SIZES.layers) },
    threads: { type: "string", default: "2" },
    decode: { type: "string", default: "32" },
    rounds: { type: "string", default: "5" },
    replay: { type: "string", default: "on" },
    arms: { type: "string", default: "fp8,fp8-tile,fp8-scaled,fused,unpacked,f32,int8" },
    "llama-cpp": { type: "boolean", default: false },
    baseline: { type: "string" },
    "llama-threads": { type: "string" },
    profile: { type: "string" },
    "profile-arm": { type: "string", default: "int8" },
    allocation: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const count = (name: keyof typeof args) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${name} must be a positive integer, got ${args[name]}`);
  return n;
};
const [hidden, intermediate, experts, topK, layers, threads, decodeLen, rounds] = (
  ["hidden", "intermediate", "experts", "top-k", "layers", "threads", "decode", "rounds"] as const
).map(count) as number[] as [number, number, number, number, number, number, number, number];
const llamaThreads = args["llama-threads"] === undefined ? threads : count("llama-threads");
const replay = args.replay;
if (replay !== "on" && replay !== "off") throw new Error(`--replay must be on or off, got ${replay}`);
/**
 * The engine arms' keys: the exact arms on the MXFP4 values (they must decode the same tokens),
 * the FP8 tile arms (values rounded into tiles: their tokens counted against fused's, and
 * fp8-scaled's against fp8-tile's), then the integer arm.
 */
const ARM_KEYS = ["fp8", "fp8-tile", "fp8-scaled", "fused", "unpacked", "f32", "int8"] as const;
type ArmKey = (typeof ARM_KEYS)[number] | "llama.cpp" | "baseline" | "baseline-fused";
const chosenArms = new Set(args.arms.split(",").map((a) => a.trim()));
for (const a of chosenArms)
  if (!(ARM_KEYS as readonly string[]).includes(a))
    throw new Error(`--arms takes names from ${ARM_KEYS.join(",")}, got ${a}`);
if (args.profile !== undefined && !chosenArms.has(args["profile-arm"] as string))
  throw new Error(`--profile profiles the ${args["profile-arm"]} arm: give it in --arms`);

const config = moeBenchConfig({ hidden, intermediate, experts, topK, layers });

const EXPERT = /\.mlp\.experts\./;

/** Weight bytes one decode token reads: expert tensors at topK of the experts, the embedding's row. */
function bytesPerToken(tensors: readonly { name: string; byteLength: number }[]): number {
  let bytes = 0;
  for (const { name, byteLength } of tensors) {
    if (name === "model.embed_tokens.weight") bytes += (byteLength / 512) * 1;
    else bytes += EXPERT.test(name) ? (byteLength * topK) / experts : byteLength;
  }
  return bytes;
}

/** The same checkpoint with its MXFP4 experts dequantized to f32 [E, rows, cols]. */
function withF32Experts(files: TinyModelFiles): TinyModelFiles {
  const tensors = new Map<string, HostTensor>();
  for (const [name, t] of files.tensors) {
    if (name.endsWith("_scales")) continue;
    if (!name.endsWith("_blocks")) {
      tensors.set(name, t);
      continue;
    }
    const base = name.slice(0, -"_blocks".length);
    const scales = files.tensors.get(`${base}_scales`)?.data as Uint8Array;
    const data = dequantizeMxfp4(t.data as Uint8Array, scales, t.shape, base);
    tensors.set(base, {
      dtype: "F32",
      shape: [...t.shape.slice(0, -2), (t.shape.at(-2) as number) * 32],
      data,
    });
  }
  return { ...files, tensors };
}

interface Decoded {
  /** Decode tok/s from the first token to the last (prefill excluded). */
  readonly rate: number;
  /** The same tokens per second of this process's CPU time over that span (robust to other load). */
  readonly cpuRate: number;
  readonly tokens: number[];
  /** The span timed: the first token's arrival to the last's (performance.now() ms). */
  readonly span: readonly [number, number];
}

interface Arm {
  readonly key: ArmKey;
  readonly name: string;
  /** Greedy decode of `maxTokens` (default --decode) after `prompt`. */
  readonly decode: (prompt: number[], maxTokens?: number) => Promise<Decoded>;
  readonly bytes: number;
  readonly close: () => Promise<void>;
}

/**
 * An engine over `model` with its `mxfp4` switch set to `mxfp4` and its `fp8` to `fp8` (and
 * `replay` to --replay); the engine is asked which paths it runs, so an arm cannot silently
 * measure another path.
 */
function engineFor(
  model: LoadedModel,
  mxfp4: "fused" | "unpacked" | "int8" = "fused",
  EngineOf: typeof Engine = Engine,
  fp8: "exact" | "scaled" = "exact",
): Engine {
  const engine = new EngineOf(model, {
    threads,
    maxNumSeqs: 1,
    maxModelLen: 512,
    kvCacheBytes: 64 << 20,
    switches: { replay, ...(mxfp4 !== "fused" ? { mxfp4 } : {}), ...(fp8 !== "exact" ? { fp8 } : {}) },
  });
  if (engine.kernels.mxfp4 !== mxfp4) {
    throw new Error(`the engine runs ${engine.kernels.mxfp4} MXFP4 kernels, not the arm's`);
  }
  if ((engine.kernels.fp8 ?? "exact") !== fp8) {
    throw new Error(`the engine runs fp8=${engine.kernels.fp8} kernels, not the arm's`);
  }
  return engine;
}

/** A token's arrival: wall time (ms) and the process's CPU time (µs). */
interface Arrival {
  readonly wall: number;
  readonly cpu: number;
}

function arrival(): Arrival {
  const { user, system } = process.cpuUsage();
  return { wall: performance.now(), cpu: user + system };
}

/** The rates over the tokens' arrivals, from the first token to the last. */
function decoded(arrivals: Arrival[], tokens: number[]): Decoded {
  const [first, last] = [arrivals[0] as Arrival, arrivals.at(-1) as Arrival];
  const steps = arrivals.length - 1;
  return {
    rate: steps / ((last.wall - first.wall) / 1000),
    cpuRate: steps / ((last.cpu - first.cpu) / 1e6),
    tokens,
    span: [first.wall, last.wall],
  };
}

/** An arm of an engine over `model`, greedy and past EOS. */
function engineArm(key: ArmKey, name: string, engine: Engine, bytes: number): Arm {
  const decode = async (prompt: number[], maxTokens = decodeLen) => {
    const times: Arrival[] = [];
    const tokens: number[] = [];
    for await (const out of engine.submit({
      promptTokenIds: prompt,
      maxTokens,
      sampling: { temperature: 0 },
      ignoreEos: true,
    })) {
      if (!out.token) continue;
      times.push(arrival());
      tokens.push(out.token.tokenId);
    }
    return decoded(times, tokens);
  };
  return { key, name, decode, bytes, close: () => engine.close() };
}

/**
 * How far llama.cpp's greedy tokens follow the engine's: the first free-running token where they
 * part, and, fed the engine's tokens as context (so one parting does not carry on), at how many
 * positions llama.cpp picks the engine's next token; at each position it does not, the engine's
 * gap between its first and second choice in log-probability says whether that was a near tie.
 */
async function checkTokens(engine: Engine, llama: Arm, prompt: number[]): Promise<void> {
  const tokens: number[] = [];
  const gaps: number[] = [];
  for await (const out of engine.submit({
    promptTokenIds: prompt,
    maxTokens: decodeLen,
    sampling: { temperature: 0 },
    ignoreEos: true,
    logprobs: 2,
  })) {
    if (!out.token) continue;
    tokens.push(out.token.tokenId);
    const [first, second] = out.token.top ?? [];
    gaps.push((first?.logprob ?? 0) - (second?.logprob ?? 0));
  }
  const free = (await llama.decode(prompt)).tokens;
  const parted = tokens.findIndex((t, i) => t !== free[i]);
  const misses: string[] = [];
  for (let k = 0; k < tokens.length; k++) {
    const [next] = (await llama.decode([...prompt, ...tokens.slice(0, k)], 1)).tokens;
    if (next !== tokens[k])
      misses.push(`position ${k} (engine's top-2 gap ${(gaps[k] as number).toFixed(3)} nats)`);
  }
  process.stdout.write(
    `llama.cpp loaded the gpt-oss GGUF with GGML MXFP4 experts; greedy from the same ${prompt.length}-token prompt:\n` +
      `  engine    ${tokens.join(" ")}\n  llama.cpp ${free.join(" ")}\n` +
      `  free-running, the first ${parted === -1 ? tokens.length : parted} of ${tokens.length} tokens match; ` +
      `fed the engine's tokens, llama.cpp picks the engine's next token at ${tokens.length - misses.length} of ${tokens.length} positions` +
      `${misses.length > 0 ? `, not at ${misses.join(", ")}` : ""}\n`,
  );
}

/** llama.cpp on the GGUF at `path`, greedy and past end-of-generation tokens, as the engine arms. */
async function llamaCppArm(path: string, bytes: number): Promise<Arm> {
  const { getLlama } = await nodeLlamaCpp();
  const llama: Llama = await getLlama({ gpu: false, build: "never", maxThreads: llamaThreads });
  let model: LlamaModel | undefined;
  let context: LlamaContext | undefined;
  const close = async () => {
    await context?.dispose();
    await model?.dispose();
    await llama.dispose();
  };
  try {
    model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    // An f32 KV cache as the engine keeps (llama.cpp's default is f16); at these lengths its size
    // does not move decode speed.
    context = await model.createContext({
      contextSize: 512,
      sequences: 1,
      threads: llamaThreads,
      batchSize: 512,
      experimentalKvCacheKeyType: "F32",
      experimentalKvCacheValueType: "F32",
    });
  } catch (error) {
    await close();
    throw error;
  }
  const ctx = context;
  const decode = async (prompt: number[], maxTokens = decodeLen) => {
    const seq = ctx.getSequence();
    const times: Arrival[] = [];
    const tokens: number[] = [];
    try {
      for await (const token of seq.evaluate(prompt as never, { temperature: 0, yieldEogToken: true })) {
        times.push(arrival());
        tokens.push(token);
        if (tokens.length === maxTokens) break;
      }
    } finally {
      seq.dispose();
    }
    return decoded(times, tokens);
  };
  return {
    key: "llama.cpp",
    name: `llama.cpp MXFP4${llamaThreads === threads ? "" : ` ${llamaThreads}t`}`,
    decode,
    bytes,
    close,
  };
}

const dir = await mkdtemp(join(tmpdir(), "bringup-moe-bench-"));
const arms: Arm[] = [];
/** What else is closed at the end: engines made but not timed. */
const closing: (() => Promise<void>)[] = [];
try {
  const corpus = await readCorpus();
  const t0 = performance.now();
  const files = minimaxTinyModel(config, corpus, { seed: 0 });
  const listed = (f: TinyModelFiles) =>
    [...f.tensors].map(([name, t]) => ({ name, byteLength: t.data.byteLength }));
  const mxfp4 = modelOfFiles("mxfp4", files, minimaxArchitecture);
  const mxfp4Bytes = bytesPerToken(listed(files));
  await writeTinyModel(join(dir, "mxfp4"), files);
  await convertCheckpoint(join(dir, "mxfp4"), join(dir, "fp8"), { to: "fp8", fp8Block: "block32" });
  const fp8 = await loadModel(join(dir, "fp8"));
  const fp8Checkpoint = await openCheckpoint(join(dir, "fp8"));
  const fp8Bytes = bytesPerToken(fp8Checkpoint.tensors);
  await fp8Checkpoint.close();
  // The layout of real FP8 checkpoints: a scale per 128x128 tile (values rounded where needed).
  await convertCheckpoint(join(dir, "mxfp4"), join(dir, "fp8-tile"), {
    to: "fp8",
    fp8Block: "tile128",
    allowInexact: true,
  });
  const fp8Tile = await loadModel(join(dir, "fp8-tile"));
  const fp8TileCheckpoint = await openCheckpoint(join(dir, "fp8-tile"));
  const fp8TileBytes = bytesPerToken(fp8TileCheckpoint.tensors);
  await fp8TileCheckpoint.close();
  const f32Files = withF32Experts(files);
  const f32 = modelOfFiles("f32", f32Files, minimaxArchitecture);
  const f32Bytes = bytesPerToken(listed(f32Files));
  const expertBytes = [...files.tensors]
    .filter(([name]) => EXPERT.test(name))
    .reduce((s, [, t]) => s + t.data.byteLength, 0);
  process.stdout.write(
    `MiniMax-M3 kit: hidden ${hidden}, ${layers} layers, ${experts} experts of ${intermediate} (top ${topK}); ` +
      `${(mxfp4.numParameters / 1e6).toFixed(0)}M parameters, ${(expertBytes / 2 ** 20).toFixed(0)} MiB of MXFP4 experts; ` +
      `made and converted in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${threads} threads; replay ${replay}\n`,
  );
  // The fused engine is made whether or not it is timed: llama.cpp's tokens are checked against it.
  const fused = engineFor(mxfp4);
  const made: Record<(typeof ARM_KEYS)[number], () => Arm> = {
    fp8: () => engineArm("fp8", "FP8 1x32 fp8=exact", engineFor(fp8), fp8Bytes),
    "fp8-tile": () => engineArm("fp8-tile", "FP8 128x128 fp8=exact", engineFor(fp8Tile), fp8TileBytes),
    "fp8-scaled": () =>
      engineArm(
        "fp8-scaled",
        "FP8 128x128 fp8=scaled",
        engineFor(fp8Tile, "fused", Engine, "scaled"),
        fp8TileBytes,
      ),
    fused: () => engineArm("fused", "fused MXFP4", fused, mxfp4Bytes),
    unpacked: () => engineArm("unpacked", "unpacked MXFP4", engineFor(mxfp4, "unpacked"), mxfp4Bytes),
    f32: () => engineArm("f32", "f32 experts", engineFor(f32), f32Bytes),
    int8: () => engineArm("int8", "int8 MXFP4", engineFor(mxfp4, "int8"), mxfp4Bytes),
  };
  for (const key of ARM_KEYS) if (chosenArms.has(key)) arms.push(made[key]());
  if (args.baseline !== undefined) {
    // The other checkout's engine and MiniMax-M3 model code (their own module instances: kernels,
    // arena and all) over the same checkpoint files.
    const root = resolve(args.baseline);
    const engineModule = (await import(
      pathToFileURL(join(root, "src/engine/index.ts")).href
    )) as typeof import("../src/engine/index.js");
    const modelModule = (await import(
      pathToFileURL(join(root, "src/engine/models/minimax-m3.ts")).href
    )) as typeof import("../src/engine/models/minimax-m3.js");
    const model = engineModule.modelOfFiles("mxfp4", files, modelModule.minimaxArchitecture);
    if (chosenArms.has("fused")) {
      const fusedThere = engineFor(model, "fused", engineModule.Engine);
      arms.push(engineArm("baseline-fused", `fused MXFP4 at ${args.baseline}`, fusedThere, mxfp4Bytes));
    }
    const engine = engineFor(model, "int8", engineModule.Engine);
    arms.push(engineArm("baseline", `int8 MXFP4 at ${args.baseline}`, engine, mxfp4Bytes));
  }
  if (!chosenArms.has("fused")) closing.push(() => fused.close());
  const prompt = mxfp4.tokenizer.encode(corpus.slice(0, 4000)).slice(0, 16);
  if (args["llama-cpp"]) {
    const ggufPath = join(dir, "gpt-oss.gguf");
    await writeGptOssGguf(files, ggufPath);
    // The same tensors llama.cpp reads per token: its MXFP4 blocks carry the scale byte inline.
    if (llamaThreads >= availableParallelism())
      process.stdout.write(
        `llama.cpp's ${llamaThreads} threads fill all ${availableParallelism()} cores: its spinning workers contend with node's thread that feeds each token, so its decode may stall (--llama-threads sets fewer)\n`,
      );
    const llama = await llamaCppArm(ggufPath, mxfp4Bytes);
    arms.push(llama);
    await checkTokens(fused, llama, prompt);
  }
  const bandwidth = await memoryBandwidth(threads);
  process.stdout.write(`memory read bandwidth ${(bandwidth / 1e9).toFixed(1)} GB/s on ${threads} threads\n`);

  const exact4: readonly ArmKey[] = ["fp8", "fused", "unpacked", "f32", "baseline-fused"];
  /** The index of arm `key` in `arms`, -1 where it is not run. */
  const at = (key: ArmKey) => arms.findIndex((arm) => arm.key === key);
  const loadBefore = loadavg()[0] as number;
  const rates = arms.map(() => [] as number[]);
  const cpuRates = arms.map(() => [] as number[]);
  const spans = arms.map(() => [] as (readonly [number, number])[]);
  for (let round = 0; round <= rounds; round++) {
    const order = arms.map((_, i) => (i + round) % arms.length);
    if (round % 2 === 1) order.reverse();
    const tokens: number[][] = [];
    const line: string[] = [];
    for (const i of order) {
      const run = await (arms[i] as Arm).decode(prompt);
      tokens[i] = run.tokens;
      if (round > 0) {
        rates[i]?.push(run.rate);
        cpuRates[i]?.push(run.cpuRate);
        spans[i]?.push(run.span);
      }
      line.push(`${(arms[i] as Arm).name} ${run.rate.toFixed(2)}`);
    }
    // The exact arms must agree exactly; the integer arm's agreement with fused is counted.
    const exact = arms.flatMap((arm, i) => (exact4.includes(arm.key) ? [tokens[i]?.join()] : []));
    const same = exact.every((t) => t === exact[0]);
    const [fusedTokens, int8Tokens, tileTokens, scaledTokens] = [
      at("fused"),
      at("int8"),
      at("fp8-tile"),
      at("fp8-scaled"),
    ].map((i) => tokens[i]);
    /** How many of `b`'s first tokens `a` follows (`a` and `b` both run), as a clause. */
    const follows = (what: string, a: number[] | undefined, b: number[] | undefined) => {
      if (a === undefined || b === undefined) return "";
      const parts = a.findIndex((t, i) => t !== b[i]);
      return `; ${what} for ${parts === -1 ? b.length : parts} of ${b.length} tokens`;
    };
    process.stdout.write(
      `round ${round}${round === 0 ? " (warm-up)" : ""}: ${line.join(", ")} tok/s` +
        (exact.length > 1
          ? `; ${same ? "same tokens on every exact engine arm" : "EXACT ENGINE ARMS DECODED DIFFERENT TOKENS"}`
          : "") +
        follows("int8 follows fused", int8Tokens, fusedTokens) +
        follows("FP8 128x128 fp8=exact follows fused", tileTokens, fusedTokens) +
        follows("fp8=scaled follows fp8=exact (128x128)", scaledTokens, tileTokens) +
        "\n",
    );
  }

  process.stdout.write(
    `load average (1 min) ${loadBefore.toFixed(2)} before the rounds, ${(loadavg()[0] as number).toFixed(2)} after, on ${availableParallelism()} cores\n`,
  );
  const nameWidth = Math.max(...arms.map((arm) => arm.name.length));
  process.stdout.write(
    `\n${"arm".padEnd(nameWidth)} ${"tok/s".padStart(8)} ${"MB/token".padStart(9)} ${"roofline".padStart(9)} ${"of it".padStart(6)} ${"tok/CPU-s".padStart(10)}\n`,
  );
  arms.forEach((arm, i) => {
    const rate = median(rates[i] as number[]);
    const roofline = bandwidth / arm.bytes;
    process.stdout.write(
      `${arm.name.padEnd(nameWidth)} ${rate.toFixed(2).padStart(8)} ${(arm.bytes / 1e6).toFixed(1).padStart(9)} ${roofline.toFixed(1).padStart(9)} ${((100 * rate) / roofline).toFixed(0).padStart(5)}% ${median(
        cpuRates[i] as number[],
      )
        .toFixed(2)
        .padStart(10)}\n`,
    );
  });
  // Observers are told after the fact: a turn of the event loop lets the last entries in.
  await new Promise((resolve) => setImmediate(resolve));
  const timed = rounds * decodeLen;
  process.stdout.write(
    `\ngarbage collections starting inside each arm's timed decodes (${rounds} x ${decodeLen} tokens):\n`,
  );
  arms.forEach((arm, i) => {
    process.stdout.write(
      `${arm.name.padEnd(nameWidth)} ${collectionsIn(spans[i] as [number, number][])} over ${timed} tokens\n`,
    );
  });
  process.stdout.write(
    "\nratios of decode tok/s, then of tok per CPU-second (95% intervals, rounds as blocks); where weight traffic binds, each follows its bytes ratio\n",
  );
  const ratio = (of: number[][], b: number, a: number) => {
    const interval = blockedRatioInterval(
      (of[a] as number[]).map((rate, r) => ({ a: [rate], b: [(of[b] as number[])[r] as number] })),
    );
    return `${interval.estimate.toFixed(2)}x [${interval.low.toFixed(2)}, ${interval.high.toFixed(2)}]`;
  };
  const compare = (bKey: ArmKey, aKey: ArmKey) => {
    const [b, a] = [at(bKey), at(aKey)];
    if (a < 0 || b < 0) return;
    const [A, B] = [arms[a] as Arm, arms[b] as Arm];
    process.stdout.write(
      `${`${B.name} vs ${A.name}`.padEnd(2 * nameWidth)} ${ratio(rates, b, a)}, per CPU-s ${ratio(cpuRates, b, a)}; bytes per token ${A.name} / ${B.name} ${(A.bytes / B.bytes).toFixed(2)}x\n`,
    );
  };
  compare("fused", "unpacked");
  compare("fused", "f32");
  compare("fp8", "fused");
  compare("fp8-tile", "fused");
  compare("fp8-scaled", "fused");
  compare("fp8-scaled", "fp8-tile");
  compare("fp8", "f32");
  compare("int8", "fused");
  compare("fused", "llama.cpp");
  compare("int8", "llama.cpp");
  compare("int8", "baseline");
  compare("fused", "baseline-fused");
  compare("baseline", "llama.cpp");
  if (args.allocation) {
    process.stdout.write(
      `\nallocated by each engine arm (requests after the ${prompt.length}-token prompt):\n`,
    );
    for (const arm of arms)
      if (arm.key !== "llama.cpp")
        process.stdout.write(
          `${arm.name.padEnd(nameWidth)} ${await allocationOf((tokens) => arm.decode(prompt, tokens), decodeLen)}\n`,
        );
  }
  if (args.profile !== undefined) {
    const arm = arms[at(args["profile-arm"] as ArmKey)] as Arm;
    await profileDecode(arm.name, () => arm.decode(prompt), args.profile);
  }
} finally {
  await Promise.all([...arms.map((arm) => arm.close()), ...closing.map((close) => close())]);
  await rm(dir, { recursive: true, force: true });
}
