/**
 * Long-context attention: the scalar reference (paged-attention.ts) against the fast kernel
 * (attention-kernel.ts through the pool) in one process on the same cache, then full prefills
 * through the Engine.
 *
 *   npx tsx bench/attention-prefill.ts [--threads 2] [--chunk 512] [--contexts 4096,8192,16384]
 *                                      [--engine 16384,32768] [--engine-simd 1|0]
 *
 * Part 1: one layer with one key/value head of 128 (query/key) and 64 (value), a block table of
 * scattered 16-token blocks. At each context N it attends a prefill chunk (the last --chunk tokens,
 * positions N-chunk..N-1) with both kernels, checks the outputs are bit-identical, and prints
 * tokens/s and the ratio (the reference is single-threaded by design; the fast kernel is shown on
 * one thread and on --threads).
 * Part 2: a two-layer model shaped like the needle gate's (layer 0 sliding-window, layer 1 global;
 * one head of 128/64 each) prefills --engine contexts end to end (maxTokens 1) and prints seconds
 * and tokens/s. CPU time is printed beside wall time because a shared machine's load skews the latter.
 */
import { availableParallelism } from "node:os";
import { BlockPlacement } from "../src/engine/cache/placement.js";
import { PagedKv } from "../src/engine/cache/storage.js";
import { Engine, findTinySize, type LoadedModel, readCorpus } from "../src/engine/index.js";
import { AttentionScratch, pagedAttention } from "../src/engine/kernels/paged-attention/paged-attention.js";
import { MatmulPool } from "../src/engine/kernels/pool.js";
import { Rng } from "../src/engine/tensor/random.js";
import { generateTinyModel, tinyFilesToModel } from "../src/engine/tiny/generate.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  threads: { type: "string", default: String(availableParallelism()) },
  chunk: { type: "string", default: "512" },
  contexts: { type: "string", default: "4096,8192,16384" },
  engine: { type: "string", default: "16384,32768" },
  "engine-simd": { type: "string", default: "1" },
});
const threads = Number(args.threads);
const chunk = Number(args.chunk);
const HEAD_DIM = 128;
const V_HEAD_DIM = 64;
const BLOCK = 16;
const WINDOW = 128;

function kernelFigures(): void {
  const contexts = (args.contexts as string).split(",").map(Number);
  const maxCtx = Math.max(...contexts);
  const numBlocks = maxCtx / BLOCK + 8;
  const cache = new PagedKv(new BlockPlacement(BLOCK, 0, false), 0, numBlocks, 1, HEAD_DIM, V_HEAD_DIM);
  const rng = new Rng(1);
  rng.fillNormal(cache.keys, 1);
  rng.fillNormal(cache.values, 1);
  // A scattered block table, as a long-running server's allocator leaves it.
  const table = Array.from({ length: numBlocks }, (_, i) => i);
  for (let i = table.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [table[i], table[j]] = [table[j] as number, table[i] as number];
  }
  const arms = [
    { name: "plain 1t", pool: new MatmulPool(1, { simd: false }) },
    { name: "simd 1t", pool: new MatmulPool(1, { simd: true }) },
    { name: `simd ${threads}t`, pool: new MatmulPool(threads, { simd: true }) },
  ];
  const scale = 1 / Math.sqrt(HEAD_DIM);
  console.log(`attention, one head ${HEAD_DIM}/${V_HEAD_DIM}, a ${chunk}-token prefill chunk at context N`);
  console.log("tok/s by wall clock (by this process's CPU time), ratio to the reference by wall (by CPU)");
  console.log(["context", "reference", ...arms.map((a) => a.name), "bits"].join(" | "));
  const cell = (refWall: number, refCpu: number, wall: number, cpu: number, threadsUsed: number) =>
    `${(chunk / wall).toFixed(0)} (${((chunk * threadsUsed) / cpu).toFixed(0)}) ${(refWall / wall).toFixed(2)}x (${((refCpu * threadsUsed) / cpu).toFixed(2)}x)`;
  for (const N of contexts) {
    const q = rng.fillNormal(new Float32Array(chunk * HEAD_DIM), 1);
    const meta = new Int32Array(3 * chunk);
    for (let t = 0; t < chunk; t++) meta.set([N - chunk + t, 0, 0], 3 * t);
    const ref = new Float32Array(chunk * V_HEAD_DIM);
    const scratch = new AttentionScratch();
    const clock = () => ({ wall: performance.now() / 1000, cpu: process.cpuUsage().user / 1e6 });
    let start = clock();
    for (let t = 0; t < chunk; t++) {
      pagedAttention(
        { q, qOffset: t * HEAD_DIM, blocks: table, pos: N - chunk + t, out: ref, outOffset: t * V_HEAD_DIM },
        cache,
        { numHeads: 1, scale },
        scratch,
      );
    }
    let end = clock();
    const refWall = end.wall - start.wall;
    const refCpu = end.cpu - start.cpu;
    let same = true;
    const cells = arms.map(({ pool }) => {
      const out = new Float32Array(chunk * V_HEAD_DIM);
      const job = {
        meta,
        tables: Int32Array.from(table),
        blockSize: BLOCK,
        ringBlocks: 0,
        q,
        out,
        keys: cache.keys,
        values: cache.values,
        numHeads: 1,
        numKvHeads: 1,
        headDim: HEAD_DIM,
        vHeadDim: V_HEAD_DIM,
        scale,
        sinks: null,
      };
      pool.attention(job); // warm-up (JIT, worker registration)
      start = clock();
      pool.attention(job);
      end = clock();
      same &&= out.every((v, i) => Object.is(v, ref[i]));
      // CPU time per thread: the process's CPU time over the threads that ran.
      return cell(refWall, refCpu, end.wall - start.wall, end.cpu - start.cpu, pool.threads);
    });
    console.log(
      [String(N), cell(refWall, refCpu, refWall, refCpu, 1), ...cells, same ? "identical" : "DIFFERENT"].join(
        " | ",
      ),
    );
  }
  return void Promise.all(arms.map((a) => a.pool.close()));
}

/** Two layers (sliding window then global), one head of 128/64 each, seeded random weights. */
async function needleShapedModel(maxLen: number): Promise<LoadedModel> {
  const base = findTinySize("tiny");
  if (base === undefined) throw new Error("tiny size missing");
  const size = {
    ...base,
    name: "attention-bench",
    hiddenSize: 256,
    numLayers: 2,
    numHeads: 1,
    numKvHeads: 1,
    headDim: HEAD_DIM,
    intermediateSize: 512,
    maxPositionEmbeddings: maxLen,
  };
  const files = generateTinyModel(size, await readCorpus());
  const config = {
    ...files.config,
    v_head_dim: V_HEAD_DIM,
    layer_types: ["sliding_attention", "full_attention"],
    sliding_window: WINDOW,
  };
  // v_proj and o_proj take the value head size; the rest of the generated tensors fit as they are.
  const rng = new Rng(7);
  const tensors = new Map(files.tensors);
  for (const name of files.tensors.keys()) {
    const shape = name.endsWith("v_proj.weight")
      ? [V_HEAD_DIM, 256]
      : name.endsWith("o_proj.weight")
        ? [256, V_HEAD_DIM]
        : undefined;
    if (shape === undefined) continue;
    const data = rng.fillNormal(new Float32Array(V_HEAD_DIM * 256), 0.02);
    tensors.set(name, { dtype: "F32", shape, data });
  }
  return await tinyFilesToModel(size.name, { ...files, config, tensors });
}

async function engineFigures(): Promise<void> {
  const lengths = (args.engine as string)
    .split(",")
    .filter((s) => s !== "")
    .map(Number);
  if (lengths.length === 0) return;
  const maxLen = Math.max(...lengths) + 16;
  const model = await needleShapedModel(maxLen);
  const simd = args["engine-simd"] !== "0";
  const engine = new Engine(model, { maxModelLen: maxLen, maxNumSeqs: 1, threads, simd });
  console.log(
    `\nengine prefill, two layers (sliding window ${WINDOW} + global), one head ${HEAD_DIM}/${V_HEAD_DIM}, ${threads} threads, ${simd ? "SIMD" : "plain"} kernels`,
  );
  console.log("wall seconds, tok/s; process CPU seconds");
  const rng = new Rng(3);
  const vocab = model.config.vocabSize;
  for (const n of lengths) {
    const prompt = Array.from({ length: n }, () => Math.floor(rng.next() * (vocab - 8)));
    const start = performance.now();
    const cpu0 = process.cpuUsage().user;
    for await (const _ of engine.submit({
      promptTokenIds: prompt,
      maxTokens: 1,
      sampling: { temperature: 0 },
    })) {
      // drain
    }
    const seconds = (performance.now() - start) / 1000;
    const cpu = (process.cpuUsage().user - cpu0) / 1e6;
    console.log(
      `${String(n).padStart(6)} tokens  ${seconds.toFixed(2).padStart(7)} s  ${(n / seconds).toFixed(0).padStart(6)} tok/s  cpu ${cpu.toFixed(2)} s`,
    );
  }
  await engine.close();
}

kernelFigures();
await engineFigures();
