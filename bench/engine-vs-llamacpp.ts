/**
 * The reference engine against llama.cpp (through node-llama-cpp) on the same f32 llama-style
 * weights and the same CPU threads, measured in one run: prefill tok/s, decode tok/s at batch 1,
 * aggregate decode tok/s with 16 streams, their ratios, and the decode roofline (weight bytes per
 * token against the memory bandwidth the same number of threads reaches together: measured again
 * after both arms of every round, once the process is idle, as the peak of several passes, see
 * bench/memory-bandwidth.ts; every round's reading and its passes' range are printed). Beside it
 * each round reads the bandwidth the engine's own matmul tile reaches at one input row with no
 * dispatch around it (bench/wasm-bandwidth.ts's `tile-m1`, same threads), and batch 1 is also given
 * against that reading: memcmp's reading on this VM is bimodal (~34 or ~55-61 GB/s, pass to pass),
 * and the tile's beside it says whether the high reading is one wasm threads reach then. Prefill is
 * set against a measured compute ceiling: the flop/s the same threads reach running 128-bit
 * WebAssembly fused multiply-adds from registers (bench/fma-peak.ts), the rate the engine's matmul
 * tile reaches alone on one layer's MLP shape at the prompt's token count, and each engine's
 * prefill in matmul flop/s (2 per weight per token), each as a fraction of that peak. The streams'
 * decode is set against a ceiling measured in every round on the same threads: a step of the
 * model's matmuls alone at one input row a stream, every layer's weights of its own, dispatched as
 * the engine dispatches them (bench/step-matmuls.ts); its tokens a second are what the streams
 * would reach if a step did nothing else, and 5 x batch 1 against it says whether 5x scaling fits
 * under it in that round. The same step with one layer's weights in every layer (read from the
 * last-level cache, not memory) gives a second ceiling: the streams' rate if each weight's first
 * read in a step cost no more than a cache hit, so the two ceilings apart are what that first read
 * from memory costs the step.
 *
 * The engine's model is loaded as `bringup serve` loads it: written to a directory, then read by
 * loadModel. The two arms alternate over several rounds after a warm-up round, each started once
 * the process's threads are idle (the wait is printed), and each round says how much of the
 * machine's CPU time the hypervisor gave to other guests while each arm's batch 1 and its streams
 * decoded (/proc/stat's steal; on a shared VM a round with much of it is slow for that reason,
 * and a 16/1 ratio whose two parts saw different steal is off by it); every round is printed, then each
 * figure's median and each ratio with its 95% interval (rounds as blocks).
 *
 * Batch-1 decode is timed from a stream's first token to its last, so its prefill is excluded. The
 * 16-stream aggregate is given two ways, each measured alike for both engines: "all decoding", the
 * tokens emitted while every stream is decoding (after the last stream's first token, up to the
 * first stream's last token) over that window, which compares like with like against batch 1; and
 * "from submission", every stream's tokens over the time from submitting them all to the last
 * token, which also pays for the sixteen 16-token prefills.
 *
 * node-llama-cpp (with its CPU binaries, about 80 MB) is not part of the default install: the first
 * run installs it into .cache/bench-deps/ and says so (bench/node-llama-cpp.ts).
 *
 * The engine runs with its model's switches at their defaults unless --switch sets some (e.g.
 * replay=off, whose decode steps are then built anew each step: replay is on by default), for every engine
 * figure alike; the header line says which.
 *
 *   npx tsx bench/engine-vs-llamacpp.ts [--size bench-100m] [--threads 2] [--decode 32] [--rounds 5]
 *     [--switch replay=off]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { median } from "simple-statistics";
import { blockedRatioInterval } from "../src/bench/index.js";
import {
  Engine,
  findTinySize,
  generateTinyModel,
  type LoadedModel,
  loadModel,
  readCorpus,
  type TinyModelFiles,
  writeTinyModel,
} from "../src/engine/index.js";
import { MatmulPool } from "../src/engine/kernels/pool.js";
import { Rng } from "../src/engine/tensor/random.js";
import { tileLayout } from "../src/engine/tensor/row-quads.js";
import { shareArray, type Weight } from "../src/engine/tensor/weight.js";
import { abVerdict } from "../src/records/interval.js";
import { type CpuTicks, cpuTicks, describeSteal } from "./cpu-steal.js";
import { fmaPeak } from "./fma-peak.js";
import { type GgufTensor, gguf, ggufBpeTokenizer, writeGguf } from "./gguf-writer.js";
import { describeBandwidth, measureBandwidth, processIdle } from "./memory-bandwidth.js";
import { type LlamaContext, nodeLlamaCpp } from "./node-llama-cpp.js";
import { type DecoderShapes, StepMatmuls } from "./step-matmuls.js";
import { WasmReaders } from "./wasm-bandwidth.js";

const USAGE = `usage: npx tsx bench/engine-vs-llamacpp.ts [options]
  --size NAME      tiny model size to generate (default bench-100m)
  --threads N      CPU threads for both engines (default: all cores)
  --prompt N       prefill prompt tokens (default 256)
  --decode N       tokens decoded per stream (default 32)
  --streams N      concurrent streams for the aggregate figures (default 16)
  --rounds N       measured rounds, arms alternated, after one warm-up round (default 5)
  --switch N=V     set one of the engine model's switches (repeatable), as \`bringup serve --switch\`
                   does, e.g. replay=off; every engine figure runs with them (default: none, the
                   model's defaults)
  --help           print this and exit
`;
const { values: args } = parseArgs({
  options: {
    size: { type: "string", default: "bench-100m" },
    threads: { type: "string", default: String(availableParallelism()) },
    prompt: { type: "string", default: "256" },
    decode: { type: "string", default: "32" },
    streams: { type: "string", default: "16" },
    rounds: { type: "string", default: "5" },
    switch: { type: "string", multiple: true, default: [] },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const threads = Number(args.threads);
const promptLen = Number(args.prompt);
const decodeLen = Number(args.decode);
const streams = Number(args.streams);
const rounds = Number(args.rounds);
const switches = Object.fromEntries(
  args.switch.map((given) => {
    const match = /^([\w-]+)=(.+)$/.exec(given);
    if (match === null) throw new Error(`--switch ${given}: expected name=value, e.g. replay=on`);
    return [match[1] as string, match[2] as string];
  }),
);

interface Figures {
  prefill: number;
  decode: number;
  /** 16 streams: tokens while all are decoding, per second of that window. */
  steady: number;
  /** 16 streams: all tokens per second from submission to the last token. */
  aggregate: number;
  /** The machine's CPU steal while batch 1 decoded, then while the 16 streams ran (describeSteal). */
  steal: { decode: string; streams: string };
}

/** One measured round: both engines' figures and the decode roofline measured beside them. */
interface Round {
  ours: Figures;
  theirs: Figures;
  roofline: number;
  /** The same from the tile's reading at one input row (WasmReaders' tile-m1). */
  tileRoofline: number;
  /** The streams' decode ceiling: tok/s of a step that were only its matmuls (StepMatmuls). */
  ceiling: number;
  /** The same step's tok/s with its weights' first reads from the last-level cache. */
  cachedCeiling: number;
}

/** Decode rate of one stream from its token times (ms): tokens after the first over first-to-last. */
function decodeRate(times: number[]): number {
  return (times.length - 1) / (((times.at(-1) as number) - (times[0] as number)) / 1000);
}

/**
 * Tokens per second while every stream is decoding, from the last stream's first token to the
 * first stream's last one: the sum of each stream's decode rate over that window, each taken as
 * decodeRate does over the stream's own tokens from its last one at or before the window's start
 * to its first one at or after its end (so tokens of one step that reach streams a moment apart
 * are neither lost nor counted twice at the edges).
 */
function steadyRate(streams: number[][]): number {
  const start = Math.max(...streams.map((t) => t[0] as number));
  const end = Math.min(...streams.map((t) => t.at(-1) as number));
  if (!(end > start)) return Number.NaN;
  let rate = 0;
  for (const times of streams) {
    const open = times.findLastIndex((t) => t <= start);
    const close = times.findIndex((t) => t >= end);
    rate += (close - open) / (((times[close] as number) - (times[open] as number)) / 1000);
  }
  return rate;
}

/** Both 16-stream figures from every stream's token times and the time they were submitted. */
function aggregateRates(streams: number[][], submitted: number): Pick<Figures, "steady" | "aggregate"> {
  const last = Math.max(...streams.map((t) => t.at(-1) as number));
  const tokens = streams.reduce((s, t) => s + t.length, 0);
  return { steady: steadyRate(streams), aggregate: tokens / ((last - submitted) / 1000) };
}

/** HF q/k rows are rotate-half per head; GGUF llama wants interleaved pairs (what HF's converter does). */
function interleaveRope(w: Float32Array, heads: number, headDim: number, cols: number): Float32Array {
  const out = new Float32Array(w.length);
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let t = 0; t < 2; t++) {
        const from = (h * headDim + t * half + i) * cols;
        const to = (h * headDim + 2 * i + t) * cols;
        out.set(w.subarray(from, from + cols), to);
      }
    }
  }
  return out;
}

async function toGguf(files: TinyModelFiles, path: string): Promise<void> {
  const c = files.config as Record<string, number>;
  const H = c.hidden_size as number;
  const headDim = c.head_dim as number;
  const get = (name: string) => files.tensors.get(name)?.data as Float32Array;
  const tensors: GgufTensor[] = [
    { name: "token_embd.weight", ne: [H, c.vocab_size as number], data: get("model.embed_tokens.weight") },
  ];
  for (let i = 0; i < (c.num_hidden_layers as number); i++) {
    const p = `model.layers.${i}`;
    const I = c.intermediate_size as number;
    const nh = c.num_attention_heads as number;
    const nkv = c.num_key_value_heads as number;
    tensors.push(
      { name: `blk.${i}.attn_norm.weight`, ne: [H], data: get(`${p}.input_layernorm.weight`) },
      {
        name: `blk.${i}.attn_q.weight`,
        ne: [H, nh * headDim],
        data: interleaveRope(get(`${p}.self_attn.q_proj.weight`), nh, headDim, H),
      },
      {
        name: `blk.${i}.attn_k.weight`,
        ne: [H, nkv * headDim],
        data: interleaveRope(get(`${p}.self_attn.k_proj.weight`), nkv, headDim, H),
      },
      { name: `blk.${i}.attn_v.weight`, ne: [H, nkv * headDim], data: get(`${p}.self_attn.v_proj.weight`) },
      {
        name: `blk.${i}.attn_output.weight`,
        ne: [nh * headDim, H],
        data: get(`${p}.self_attn.o_proj.weight`),
      },
      { name: `blk.${i}.ffn_norm.weight`, ne: [H], data: get(`${p}.post_attention_layernorm.weight`) },
      { name: `blk.${i}.ffn_gate.weight`, ne: [H, I], data: get(`${p}.mlp.gate_proj.weight`) },
      { name: `blk.${i}.ffn_up.weight`, ne: [H, I], data: get(`${p}.mlp.up_proj.weight`) },
      { name: `blk.${i}.ffn_down.weight`, ne: [I, H], data: get(`${p}.mlp.down_proj.weight`) },
    );
  }
  tensors.push(
    { name: "output_norm.weight", ne: [H], data: get("model.norm.weight") },
    { name: "output.weight", ne: [H, c.vocab_size as number], data: get("lm_head.weight") },
  );
  await writeGguf(
    path,
    {
      "general.architecture": gguf.str("llama"),
      "general.name": gguf.str(String(args.size)),
      "general.file_type": gguf.u32(0),
      "llama.context_length": gguf.u32(c.max_position_embeddings as number),
      "llama.embedding_length": gguf.u32(H),
      "llama.block_count": gguf.u32(c.num_hidden_layers as number),
      "llama.feed_forward_length": gguf.u32(c.intermediate_size as number),
      "llama.rope.dimension_count": gguf.u32(headDim),
      "llama.attention.head_count": gguf.u32(c.num_attention_heads as number),
      "llama.attention.head_count_kv": gguf.u32(c.num_key_value_heads as number),
      "llama.attention.key_length": gguf.u32(headDim),
      "llama.attention.value_length": gguf.u32(headDim),
      "llama.attention.layer_norm_rms_epsilon": gguf.f32(c.rms_norm_eps as number),
      "llama.rope.freq_base": gguf.f32(c.rope_theta as number),
      ...ggufBpeTokenizer(files),
    },
    tensors,
  );
}

/**
 * Flop/s of the engine's matmul alone (MatmulPool on `threads` threads, f32 weights in the shared
 * memory as the loader places them) for an [M, K] input times a [N, K] weight, best of five runs
 * of at least 0.3 s.
 */
function tileRate(M: number, K: number, N: number): number {
  const rng = new Rng(1);
  const pool = new MatmulPool(threads);
  const data = shareArray(rng.fillNormal(new Float32Array(N * K), 0.05));
  const weight: Weight = { dtype: "f32", rows: N, cols: K, data, ...tileLayout(data, N, K) };
  const x = rng.fillNormal(new Float32Array(M * K), 1);
  const out = new Float32Array(M * N);
  let best = 0;
  for (let trial = 0; trial < 5; trial++) {
    const t0 = performance.now();
    let runs = 0;
    do {
      pool.matmul(x, M, weight, out);
      runs++;
    } while (performance.now() - t0 < 300);
    best = Math.max(best, (2 * M * K * N * runs) / ((performance.now() - t0) / 1000));
  }
  void pool.close();
  return best;
}

async function engineFigures(engine: Engine, prompt: number[]): Promise<Figures> {
  let t0 = performance.now();
  for await (const _ of engine.submit({ promptTokenIds: prompt, maxTokens: 0 })) {
    // prefill only
  }
  const prefill = prompt.length / ((performance.now() - t0) / 1000);
  const decodeOnce = async (start: number) => {
    const times: number[] = [];
    const req = {
      promptTokenIds: prompt.slice(start, start + 16),
      maxTokens: decodeLen,
      sampling: { temperature: 0 },
      ignoreEos: true,
    };
    for await (const o of engine.submit(req)) if (o.token) times.push(performance.now());
    return times;
  };
  const ticks = [cpuTicks()];
  const decode = decodeRate(await decodeOnce(0));
  ticks.push(cpuTicks());
  t0 = performance.now();
  const all = await Promise.all(Array.from({ length: streams }, (_, i) => decodeOnce(i)));
  ticks.push(cpuTicks());
  return { prefill, decode, ...aggregateRates(all, t0), steal: stealOf(ticks) };
}

async function llamaFigures(context: LlamaContext, prompt: number[]): Promise<Figures> {
  const run = async (tokens: number[], n: number) => {
    const seq = context.getSequence();
    const times: number[] = [];
    // Like the engine's ignoreEos: an end-of-generation token is yielded and decoding goes on.
    for await (const _ of seq.evaluate(tokens as never, { temperature: 0, yieldEogToken: true })) {
      times.push(performance.now());
      if (times.length === n) break;
    }
    seq.dispose();
    return times;
  };
  let t0 = performance.now();
  const first = await run(prompt, 1);
  // Time to the first token includes one decode step, as small next to a 256-token prefill.
  const prefill = prompt.length / (((first[0] as number) - t0) / 1000);
  const ticks = [cpuTicks()];
  const decode = decodeRate(await run(prompt.slice(0, 16), decodeLen));
  ticks.push(cpuTicks());
  t0 = performance.now();
  const all = await Promise.all(
    Array.from({ length: streams }, (_, i) => run(prompt.slice(i, i + 16), decodeLen)),
  );
  ticks.push(cpuTicks());
  return { prefill, decode, ...aggregateRates(all, t0), steal: stealOf(ticks) };
}

/** The steal over readings taken before batch 1, between it and the streams, and after them. */
function stealOf(ticks: (CpuTicks | undefined)[]): Figures["steal"] {
  return { decode: describeSteal(ticks[0], ticks[1]), streams: describeSteal(ticks[1], ticks[2]) };
}

const METRICS: { key: Exclude<keyof Figures, "steal">; label: string }[] = [
  { key: "prefill", label: `prefill tok/s (${promptLen})` },
  { key: "decode", label: "decode tok/s, batch 1" },
  { key: "steady", label: `decode tok/s, ${streams} streams, all decoding` },
  { key: "aggregate", label: `output tok/s, ${streams} streams, from submission` },
];
const WIDTH = 44;
const row = (label: string, a: number, b: number) =>
  `${label.padEnd(WIDTH)} ${a.toFixed(1).padStart(9)} ${b.toFixed(1).padStart(11)} ${(a / b).toFixed(2).padStart(7)}x\n`;
const tableHead = `${"".padEnd(WIDTH)} ${"engine".padStart(9)} ${"llama.cpp".padStart(11)} ${"ratio".padStart(8)}\n`;

const size = findTinySize(String(args.size));
if (size === undefined) throw new Error(`unknown size ${args.size}`);
const dir = await mkdtemp(join(tmpdir(), "bringup-bench-"));
try {
  const corpus = await readCorpus();
  const files = generateTinyModel(size, corpus, { seed: 0 });
  const modelDir = join(dir, size.name);
  await writeTinyModel(modelDir, files);
  // As `bringup serve` loads it: from the written directory.
  const model: LoadedModel = await loadModel(modelDir);
  const ggufPath = join(dir, "model.gguf");
  await toGguf(files, ggufPath);
  const prompt = model.tokenizer.encode(corpus.slice(0, 20000)).slice(0, promptLen + streams);
  const bandwidth = await measureBandwidth(threads);
  let weightBytes = 0;
  for (const [name, t] of files.tensors)
    if (name !== "model.embed_tokens.weight") weightBytes += t.data.byteLength;
  const roofline = bandwidth.peak / weightBytes;
  process.stdout.write(
    `model ${size.name}: ${model.numParameters.toLocaleString("en-US")} parameters, f32, loaded from ${modelDir}, ${threads} threads, switches ${args.switch.join(" ") || "at their defaults"}\n`,
  );
  process.stdout.write(
    `memory read bandwidth on ${threads} threads: ${describeBandwidth(bandwidth)}; ${(weightBytes / 1e6).toFixed(0)} MB of weights per decode token; roofline ${roofline.toFixed(1)} tok/s\n`,
  );
  const peak = await fmaPeak(threads);
  const c = files.config as Record<string, number>;
  const [H, I] = [c.hidden_size as number, c.intermediate_size as number];
  const tile = tileRate(promptLen, H, I);
  process.stdout.write(
    `128-bit WebAssembly FMA peak ${(peak / 1e9).toFixed(1)} GFLOP/s on ${threads} threads (relaxed_madd from registers); ` +
      `the engine's matmul alone at M=${promptLen}, K=${H}, N=${I}: ${(tile / 1e9).toFixed(1)} GFLOP/s, ${((100 * tile) / peak).toFixed(0)}% of that peak\n`,
  );
  const { getLlama } = await nodeLlamaCpp();
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads });
  const llamaModel = await llama.loadModel({ modelPath: ggufPath, gpuLayers: 0 });
  const context = await llamaModel.createContext({
    contextSize: 4096,
    sequences: streams,
    threads,
    batchSize: 512,
  });
  const engine = new Engine(model, { threads, maxNumSeqs: streams, maxModelLen: 4096, switches });
  const readers = await WasmReaders.start(threads);
  const stepMatmuls = new StepMatmuls(threads, files.config as unknown as DecoderShapes);
  const measured: Round[] = [];
  let highestPeak = peak;
  try {
    for (let round = 0; round <= rounds; round++) {
      // Alternate which arm goes first, so neither always runs on a machine the other just warmed.
      // Each arm starts once the other's threads are idle (ggml's workers spin after a computation).
      const idleWaits: string[] = [];
      const afterIdle = async (name: string, arm: () => Promise<Figures>) => {
        const { idleAfterMs, idle } = await processIdle();
        idleWaits.push(`${name} ${idleAfterMs.toFixed(0)} ms${idle ? "" : " (still busy)"}`);
        return arm();
      };
      const runOurs = () => afterIdle("engine", () => engineFigures(engine, prompt.slice(0, promptLen)));
      const runTheirs = () => afterIdle("llama.cpp", () => llamaFigures(context, prompt.slice(0, promptLen)));
      let ours: Figures;
      let theirs: Figures;
      if (round % 2 === 0) {
        ours = await runOurs();
        theirs = await runTheirs();
      } else {
        theirs = await runTheirs();
        ours = await runOurs();
      }
      process.stdout.write(`\nround ${round}${round === 0 ? " (warm-up, not counted)" : ""}\n${tableHead}`);
      for (const m of METRICS) process.stdout.write(row(m.label, ours[m.key], theirs[m.key]));
      process.stdout.write(`waited for the process to go idle before each arm: ${idleWaits.join(", ")}\n`);
      process.stdout.write(
        `CPU steal (the hypervisor's time for other guests) while batch 1 / the ${streams} streams decoded: engine ${ours.steal.decode} / ${ours.steal.streams}, llama.cpp ${theirs.steal.decode} / ${theirs.steal.streams}\n`,
      );
      const bandwidth = await measureBandwidth(threads);
      const roofline = bandwidth.peak / weightBytes;
      process.stdout.write(
        `roofline this round ${roofline.toFixed(1)} tok/s: ${describeBandwidth(bandwidth)}\n`,
      );
      const tileBandwidth = await readers.measure("tile-m1");
      const tileRoofline = tileBandwidth.peak / weightBytes;
      process.stdout.write(
        `the tile alone at one row, same threads: ${describeBandwidth(tileBandwidth)}; roofline ${tileRoofline.toFixed(1)} tok/s\n`,
      );
      // The FMA peak again beside it: on a shared machine a reading falls with the other processes'
      // load, so the step is given against the highest reading of the run so far.
      const step = stepMatmuls.measure(streams);
      const roundPeak = await fmaPeak(threads);
      highestPeak = Math.max(highestPeak, roundPeak);
      process.stdout.write(
        `a ${streams}-stream step's matmuls alone (M=${streams}, every layer's weights, as the engine dispatches them), same threads: ${(step.flops / 1e9).toFixed(1)} GFLOP/s, ${((100 * step.flops) / highestPeak).toFixed(0)}% of the run's highest FMA peak reading, ${(highestPeak / 1e9).toFixed(1)} GFLOP/s (this round's ${(roundPeak / 1e9).toFixed(1)}), ${(step.flops / step.oneThreadFlops).toFixed(2)}x the same step on one thread (${(step.oneThreadFlops / 1e9).toFixed(1)} GFLOP/s); ceiling ${step.tokens.toFixed(1)} tok/s; with layer 0's weights in every layer (first reads from cache) ${step.cachedTokens.toFixed(1)} tok/s\n`,
      );
      if (round > 0)
        measured.push({
          ours,
          theirs,
          roofline,
          tileRoofline,
          ceiling: step.tokens,
          cachedCeiling: step.cachedTokens,
        });
    }
  } finally {
    await readers.close();
    await stepMatmuls.close();
    await engine.close();
    await context.dispose();
    await llamaModel.dispose();
    await llama.dispose();
  }
  const med = (f: (r: Round) => number) => median(measured.map(f));
  // Each round is a block of one trial per arm (blockedRatioInterval): rounds alternate which
  // engine goes first, and the interval's t quantile has rounds - 1 degrees of freedom.
  const ratio = (a: (r: Round) => number, b: (r: Round) => number) => {
    const { estimate, low, high } = blockedRatioInterval(measured.map((r) => ({ a: [a(r)], b: [b(r)] })));
    return `${estimate.toFixed(2)}x [${low.toFixed(2)}, ${high.toFixed(2)}] (${abVerdict([low, high])})`;
  };
  process.stdout.write(
    `\nover ${rounds} rounds: medians, and engine/llama.cpp as the mean ratio with its 95% interval\n${tableHead}`,
  );
  for (const { key, label } of METRICS) {
    process.stdout.write(
      `${label.padEnd(WIDTH)} ${med((r) => r.ours[key])
        .toFixed(1)
        .padStart(9)} ${med((r) => r.theirs[key])
        .toFixed(1)
        .padStart(11)}  ${ratio(
        (r) => r.theirs[key],
        (r) => r.ours[key],
      )}\n`,
    );
  }
  const scaling = (side: "ours" | "theirs") =>
    `${ratio(
      (r) => r[side].decode,
      (r) => r[side].steady,
    )} all decoding, ${ratio(
      (r) => r[side].decode,
      (r) => r[side].aggregate,
    )} from submission`;
  process.stdout.write(
    `engine: ${streams} streams / 1 stream = ${scaling("ours")}\nllama.cpp: ${scaling("theirs")}\n("all decoding" is the aggregate decode rate while every stream decodes over batch-1 decode, both first token to last; "from submission" also counts the ${streams} prefills)\n`,
  );
  process.stdout.write(
    `${streams}-stream ceilings by round: ${measured.map((r) => r.ceiling.toFixed(1)).join(", ")} tok/s; engine ${streams} streams all decoding by round: ${measured.map((r) => r.ours.steady.toFixed(1)).join(", ")} tok/s\n`,
  );
  process.stdout.write(
    `${streams} streams all decoding / ceiling: ${ratio(
      (r) => r.ceiling,
      (r) => r.ours.steady,
    )}; 5 x batch 1 / ceiling (above 1: 5x is past what the matmuls allow in that round): ${ratio(
      (r) => r.ceiling,
      (r) => 5 * r.ours.decode,
    )}\n`,
  );
  process.stdout.write(
    `with first reads from cache (layer 0's weights in every layer): ceilings by round ${measured.map((r) => r.cachedCeiling.toFixed(1)).join(", ")} tok/s; ceiling / that ${ratio(
      (r) => r.cachedCeiling,
      (r) => r.ceiling,
    )}; ${streams} streams all decoding / that ${ratio(
      (r) => r.cachedCeiling,
      (r) => r.ours.steady,
    )}; 5 x batch 1 / that ${ratio(
      (r) => r.cachedCeiling,
      (r) => 5 * r.ours.decode,
    )}\n`,
  );
  // Two flops per matmul weight per token (the embedding is a lookup; attention's are left out).
  const flopsPerToken = stepMatmuls.flopsPerToken;
  const prefillShare = (side: "ours" | "theirs") => {
    const rate = med((r) => r[side].prefill) * flopsPerToken;
    return `${(rate / 1e9).toFixed(1)} GFLOP/s, ${((100 * rate) / highestPeak).toFixed(0)}% of the run's highest FMA peak reading`;
  };
  process.stdout.write(
    `prefill in matmul flops: engine ${prefillShare("ours")} (its matmul alone reached ${((100 * tile) / peak).toFixed(0)}% of the peak read beside it); llama.cpp ${prefillShare("theirs")} (its x86 kernels are not limited to 128-bit vectors)\n`,
  );
  // The roofline is measured again in every round, beside that round's decodes.
  process.stdout.write(
    `rooflines by round: ${measured.map((r) => r.roofline.toFixed(1)).join(", ")} tok/s; engine batch 1 by round: ${measured.map((r) => r.ours.decode.toFixed(1)).join(", ")} tok/s\n`,
  );
  process.stdout.write(
    `batch-1 decode / roofline: engine ${ratio(
      (r) => r.roofline,
      (r) => r.ours.decode,
    )}, llama.cpp ${ratio(
      (r) => r.roofline,
      (r) => r.theirs.decode,
    )}\n`,
  );
  process.stdout.write(
    `by the tile's own reading at one row: rooflines ${measured.map((r) => r.tileRoofline.toFixed(1)).join(", ")} tok/s; batch-1 decode / that roofline: engine ${ratio(
      (r) => r.tileRoofline,
      (r) => r.ours.decode,
    )}\n`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
