/**
 * The reference engine against llama.cpp (through node-llama-cpp) on the same f32 llama-style
 * weights and the same CPU threads, measured in one run: prefill tok/s, decode tok/s at batch 1,
 * aggregate decode tok/s with 16 streams, their ratios, and the decode roofline (weight bytes per
 * token against measured memory bandwidth).
 *
 * Batch-1 decode is timed from a stream's first token to its last, so its prefill is excluded. The
 * 16-stream aggregate is given two ways, each measured alike for both engines: "all decoding", the
 * tokens emitted while every stream is decoding (after the last stream's first token, up to the
 * first stream's last token) over that window, which compares like with like against batch 1; and
 * "from submission", every stream's tokens over the time from submitting them all to the last
 * token, which also pays for the sixteen 16-token prefills.
 *
 *   npx tsx bench/engine-vs-llamacpp.ts [--size bench-100m] [--threads 2] [--decode 32]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { getLlama } from "node-llama-cpp";
import {
  Engine,
  findTinySize,
  generateTinyModel,
  type LoadedModel,
  readCorpus,
  type TinyModelFiles,
} from "../src/engine/index.js";
import { tinyFilesToModel } from "../src/engine/tiny/generate.js";
import { type GgufTensor, gguf, writeGguf } from "./gguf-writer.js";

const { values: args } = parseArgs({
  options: {
    size: { type: "string", default: "bench-100m" },
    threads: { type: "string", default: String(availableParallelism()) },
    prompt: { type: "string", default: "256" },
    decode: { type: "string", default: "32" },
    streams: { type: "string", default: "16" },
  },
});
const threads = Number(args.threads);
const promptLen = Number(args.prompt);
const decodeLen = Number(args.decode);
const streams = Number(args.streams);

interface Figures {
  prefill: number;
  decode: number;
  /** 16 streams: tokens while all are decoding, per second of that window. */
  steady: number;
  /** 16 streams: all tokens per second from submission to the last token. */
  aggregate: number;
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
  const model = files.tokenizerJson.model as { vocab: Record<string, number>; merges: [string, string][] };
  const added = files.tokenizerJson.added_tokens as { id: number; content: string }[];
  const tokens: string[] = [];
  const types: number[] = [];
  for (const [token, id] of Object.entries(model.vocab)) {
    tokens[id] = token;
    types[id] = 1;
  }
  for (const t of added) {
    tokens[t.id] = t.content;
    types[t.id] = 3;
  }
  const eos = (c.eos_token_id as unknown as number[])[0] as number;
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
      "tokenizer.ggml.model": gguf.str("gpt2"),
      "tokenizer.ggml.pre": gguf.str("gpt-2"),
      "tokenizer.ggml.tokens": gguf.strs(tokens),
      "tokenizer.ggml.token_type": gguf.i32s(types),
      "tokenizer.ggml.merges": gguf.strs(model.merges.map(([a, b]) => `${a} ${b}`)),
      "tokenizer.ggml.eos_token_id": gguf.u32(eos),
      "tokenizer.ggml.bos_token_id": gguf.u32(eos),
      "tokenizer.ggml.add_bos_token": gguf.bool(false),
    },
    tensors,
  );
}

/** Native read bandwidth: memcmp of two equal 256 MiB buffers, best of three (bytes/s). */
function memoryBandwidth(): number {
  const n = 256 << 20;
  const a = Buffer.alloc(n, 7);
  const b = Buffer.alloc(n, 7);
  let best = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    a.compare(b);
    best = Math.max(best, (2 * n) / ((performance.now() - t0) / 1000));
  }
  return best;
}

async function benchEngine(model: LoadedModel, prompt: number[]): Promise<Figures> {
  const engine = new Engine(model, { threads, maxNumSeqs: streams, maxModelLen: 4096 });
  try {
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
    const decode = decodeRate(await decodeOnce(0));
    t0 = performance.now();
    const all = await Promise.all(Array.from({ length: streams }, (_, i) => decodeOnce(i)));
    return { prefill, decode, ...aggregateRates(all, t0) };
  } finally {
    await engine.close();
  }
}

async function benchLlamaCpp(path: string, prompt: number[]): Promise<Figures> {
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads });
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  const context = await model.createContext({
    contextSize: 4096,
    sequences: streams,
    threads,
    batchSize: 512,
  });
  try {
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
    const decode = decodeRate(await run(prompt.slice(0, 16), decodeLen));
    t0 = performance.now();
    const all = await Promise.all(
      Array.from({ length: streams }, (_, i) => run(prompt.slice(i, i + 16), decodeLen)),
    );
    return { prefill, decode, ...aggregateRates(all, t0) };
  } finally {
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  }
}

const size = findTinySize(String(args.size));
if (size === undefined) throw new Error(`unknown size ${args.size}`);
const dir = await mkdtemp(join(tmpdir(), "bringup-bench-"));
try {
  const files = generateTinyModel(size, await readCorpus(), { seed: 0 });
  const model = tinyFilesToModel(size.name, files);
  const ggufPath = join(dir, "model.gguf");
  await toGguf(files, ggufPath);
  const text = (await readCorpus()).slice(0, 20000);
  const prompt = model.tokenizer.encode(text).slice(0, promptLen + streams);
  const bandwidth = memoryBandwidth();
  let weightBytes = 0;
  for (const [name, t] of files.tensors)
    if (name !== "model.embed_tokens.weight") weightBytes += t.data.byteLength;
  const roofline = bandwidth / weightBytes;
  process.stdout.write(
    `model ${size.name}: ${model.numParameters.toLocaleString("en-US")} parameters, f32, ${threads} threads\n`,
  );
  process.stdout.write(
    `memory read bandwidth ${(bandwidth / 1e9).toFixed(1)} GB/s; ${(weightBytes / 1e6).toFixed(0)} MB of weights per decode token; roofline ${roofline.toFixed(1)} tok/s\n`,
  );
  const ours = await benchEngine(model, prompt.slice(0, promptLen));
  const theirs = await benchLlamaCpp(ggufPath, prompt.slice(0, promptLen));
  const width = 44;
  const row = (label: string, a: number, b: number) =>
    `${label.padEnd(width)} ${a.toFixed(1).padStart(9)} ${b.toFixed(1).padStart(11)} ${(a / b).toFixed(2).padStart(7)}x\n`;
  process.stdout.write(
    `${"".padEnd(width)} ${"engine".padStart(9)} ${"llama.cpp".padStart(11)} ${"ratio".padStart(8)}\n`,
  );
  process.stdout.write(row(`prefill tok/s (${promptLen})`, ours.prefill, theirs.prefill));
  process.stdout.write(row("decode tok/s, batch 1", ours.decode, theirs.decode));
  process.stdout.write(row(`decode tok/s, ${streams} streams, all decoding`, ours.steady, theirs.steady));
  process.stdout.write(
    row(`output tok/s, ${streams} streams, from submission`, ours.aggregate, theirs.aggregate),
  );
  const scaling = (f: Figures) =>
    `${(f.steady / f.decode).toFixed(2)}x all decoding, ${(f.aggregate / f.decode).toFixed(2)}x from submission`;
  process.stdout.write(
    `engine: ${streams} streams / 1 stream = ${scaling(ours)} (llama.cpp ${scaling(theirs)}); "all decoding" is the aggregate decode rate while every stream decodes over batch-1 decode, both first token to last; "from submission" also counts the ${streams} prefills\n`,
  );
  process.stdout.write(
    `batch-1 decode at ${((100 * ours.decode) / roofline).toFixed(0)}% of roofline (llama.cpp ${((100 * theirs.decode) / roofline).toFixed(0)}%)\n`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
