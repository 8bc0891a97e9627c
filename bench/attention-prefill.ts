/**
 * Long-context attention: the scalar reference (paged-attention.ts) against the fast kernel
 * (attention-kernel.ts through the pool) in one process on the same cache, then full prefills
 * through the Engine.
 *
 *   npx tsx bench/attention-prefill.ts [--threads 2] [--chunk 512] [--engine 16384,32768]
 *
 * Part 1: one layer with one key/value head of 128 (query/key) and 64 (value), a block table of
 * scattered 16-token blocks. At each context N it attends a prefill chunk (the last --chunk tokens,
 * positions N-chunk..N-1) with both kernels, checks the outputs are bit-identical, and prints
 * tokens/s and the ratio (the reference is single-threaded by design; the fast kernel is shown on
 * one thread and on --threads).
 * Part 2: a two-layer model shaped like the needle gate's (layer 0 sliding-window where the engine
 * supports it, layer 1 global; one head of 128/64 each) prefills --engine contexts end to end
 * (maxTokens 1) and prints seconds and tokens/s.
 */
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { AttentionScratch, pagedAttention } from "../src/engine/attention/paged-attention.js";
import { LayerKvCache } from "../src/engine/cache/kv-cache.js";
import { FullCacheSpec } from "../src/engine/cache/spec.js";
import { parseHfConfig } from "../src/engine/config.js";
import { Engine, findTinySize, type LoadedModel, readCorpus } from "../src/engine/index.js";
import { MatmulPool } from "../src/engine/kernels/pool.js";
import { buildModelWeights } from "../src/engine/loader/weight-map.js";
import { Rng } from "../src/engine/tensor/random.js";
import { generateTinyModel } from "../src/engine/tiny/generate.js";
import { TextTokenizer } from "../src/engine/tokenizer/tokenizer.js";

const { values: args } = parseArgs({
  options: {
    threads: { type: "string", default: String(availableParallelism()) },
    chunk: { type: "string", default: "512" },
    contexts: { type: "string", default: "4096,8192,16384" },
    engine: { type: "string", default: "16384,32768" },
  },
});
const threads = Number(args.threads);
const chunk = Number(args.chunk);
const HEAD_DIM = 128;
const V_HEAD_DIM = 64;
const BLOCK = 16;

function kernelFigures(): void {
  const contexts = (args.contexts as string).split(",").map(Number);
  const maxCtx = Math.max(...contexts);
  const numBlocks = maxCtx / BLOCK + 8;
  const cache = new LayerKvCache(new FullCacheSpec(BLOCK), numBlocks, 1, HEAD_DIM, V_HEAD_DIM);
  const rng = new Rng(1);
  rng.fillNormal(cache.keys, 1);
  rng.fillNormal(cache.values, 1);
  // A scattered block table, as a long-running server's allocator leaves it.
  const table = Array.from({ length: numBlocks }, (_, i) => i);
  for (let i = table.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [table[i], table[j]] = [table[j] as number, table[i] as number];
  }
  const pools = [new MatmulPool(1), new MatmulPool(threads)];
  const scale = 1 / Math.sqrt(HEAD_DIM);
  console.log(`attention, one head ${HEAD_DIM}/${V_HEAD_DIM}, a ${chunk}-token prefill chunk at context N`);
  console.log(
    "context  reference tok/s  fast 1 thread tok/s  fast %d threads tok/s  ratio 1t  ratio %dt  bits",
    threads,
    threads,
  );
  for (const N of contexts) {
    const q = rng.fillNormal(new Float32Array(chunk * HEAD_DIM), 1);
    const meta = new Int32Array(3 * chunk);
    for (let t = 0; t < chunk; t++) meta.set([N - chunk + t, 0, 0], 3 * t);
    const ref = new Float32Array(chunk * V_HEAD_DIM);
    const scratch = new AttentionScratch();
    let start = performance.now();
    for (let t = 0; t < chunk; t++) {
      pagedAttention(
        { q, qOffset: t * HEAD_DIM, blocks: table, pos: N - chunk + t, out: ref, outOffset: t * V_HEAD_DIM },
        cache,
        { numHeads: 1, scale },
        scratch,
      );
    }
    const refSeconds = (performance.now() - start) / 1000;
    const fast = pools.map((pool) => {
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
      start = performance.now();
      pool.attention(job);
      return { seconds: (performance.now() - start) / 1000, out };
    });
    const same = fast.every(({ out }) => out.every((v, i) => Object.is(v, ref[i])));
    const one = fast[0] as { seconds: number };
    const many = fast[1] as { seconds: number };
    console.log(
      [
        String(N).padStart(7),
        (chunk / refSeconds).toFixed(0).padStart(16),
        (chunk / one.seconds).toFixed(0).padStart(20),
        (chunk / many.seconds).toFixed(0).padStart(21),
        `${(refSeconds / one.seconds).toFixed(2)}x`.padStart(9),
        `${(refSeconds / many.seconds).toFixed(2)}x`.padStart(9),
        same ? "identical" : "DIFFERENT",
      ].join("  "),
    );
  }
  return void Promise.all(pools.map((p) => p.close()));
}

/** Two layers (sliding window 128 then global, where the engine has a sliding spec), one head of 128/64. */
async function needleShapedModel(maxLen: number, sliding: boolean): Promise<LoadedModel> {
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
  const hf = { ...files.config, v_head_dim: V_HEAD_DIM };
  const parsed = parseHfConfig(hf);
  const config = {
    ...parsed,
    layers: parsed.layers.map((l, i) =>
      i === 0 && sliding ? { ...l, attention: { ...l.attention, kind: "sliding" as const, window: 128 } } : l,
    ),
  };
  // v_proj and o_proj take the value head size; the rest of the generated tensors fit as they are.
  const rng = new Rng(7);
  const weights = buildModelWeights(
    config,
    (name) => {
      if (name.endsWith("v_proj.weight"))
        return {
          dtype: "F32",
          shape: [V_HEAD_DIM, 256],
          data: rng.fillNormal(new Float32Array(V_HEAD_DIM * 256), 0.02),
        };
      if (name.endsWith("o_proj.weight"))
        return {
          dtype: "F32",
          shape: [256, V_HEAD_DIM],
          data: rng.fillNormal(new Float32Array(V_HEAD_DIM * 256), 0.02),
        };
      return files.tensors.get(name);
    },
    size.name,
  );
  const tokenizer = new TextTokenizer(files.tokenizerJson, files.tokenizerConfig, {
    eosTokenIds: config.eosTokenIds,
  });
  return { name: size.name, config, weights, tokenizer, numParameters: files.numParameters };
}

async function engineFigures(): Promise<void> {
  const lengths = (args.engine as string)
    .split(",")
    .filter((s) => s !== "")
    .map(Number);
  if (lengths.length === 0) return;
  const maxLen = Math.max(...lengths) + 16;
  let model: LoadedModel;
  let engine: Engine;
  let layout = "sliding(128) + global";
  try {
    model = await needleShapedModel(maxLen, true);
    engine = new Engine(model, { maxModelLen: maxLen, maxNumSeqs: 1, threads });
  } catch (error) {
    // Until the engine has a sliding-window cache spec, both layers are global.
    layout = `global + global (sliding unavailable: ${(error as Error).message.split(";")[0]})`;
    model = await needleShapedModel(maxLen, false);
    engine = new Engine(model, { maxModelLen: maxLen, maxNumSeqs: 1, threads });
  }
  console.log(
    `\nengine prefill, two layers (${layout}), one head ${HEAD_DIM}/${V_HEAD_DIM}, ${threads} threads`,
  );
  const rng = new Rng(3);
  const vocab = model.config.vocabSize;
  for (const n of lengths) {
    const prompt = Array.from({ length: n }, () => Math.floor(rng.next() * (vocab - 8)));
    const start = performance.now();
    for await (const _ of engine.submit({
      promptTokenIds: prompt,
      maxTokens: 1,
      sampling: { temperature: 0 },
    })) {
      // drain
    }
    const seconds = (performance.now() - start) / 1000;
    console.log(
      `${String(n).padStart(6)} tokens  ${seconds.toFixed(2).padStart(7)} s  ${(n / seconds).toFixed(0).padStart(6)} tok/s`,
    );
  }
  await engine.close();
}

kernelFigures();
await engineFigures();
