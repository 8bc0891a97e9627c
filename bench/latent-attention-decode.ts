/**
 * Decode speed of latent attention's alternatives, each pair measured in one process on the
 * embedded engine with trials interleaved (ABBA), each pair of trials giving one ratio:
 *
 * - sparse: GLM-5 MXFP4's tiny reference config at `--context` tokens, DSA attending the indexer's
 *   top-k (index_topk set to context / `--topk-fraction`) against the dense fallback over every
 *   earlier token (as vllm-gaudi runs these layers);
 * - absorbed: Kimi-K2.7-Code's tiny reference config at the same context, MLA with kv_b_proj
 *   absorbed into queries and outputs against the latent expanded into per-head keys and values.
 *
 * A trial prefills `context` random tokens and decodes `--decode` more, one stream; decode tok/s is
 * timed from its first token to its last. Prints each arm's median and the ratio B/A with a
 * bootstrap 95% interval.
 *
 *   npx tsx bench/latent-attention-decode.ts [--context 4096] [--topk-fraction 16] [--decode 24]
 *     [--blocks 3] [--threads 2] [--pairs sparse,absorbed]
 */
import { readFile } from "node:fs/promises";
import { availableParallelism, cpus } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/index.js";
import { Engine, Rng, readCorpus, type TinyModelFiles, tinyFilesToModel } from "../src/engine/index.js";
import { deepseekV3Architecture } from "../src/engine/models/deepseek-v3.js";
import { showsNoDifference } from "../src/records/index.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  context: { type: "string", default: "4096" },
  "topk-fraction": { type: "string", default: "16" },
  decode: { type: "string", default: "24" },
  blocks: { type: "string", default: "3" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
  pairs: { type: "string", default: "sparse,absorbed" },
});
const context = Number(args.context);
const decode = Number(args.decode);
const blocks = Number(args.blocks);
const threads = Number(args.threads);
const maxLen = context + decode + 8;
const corpus = await readCorpus();

async function referenceConfig(port: string): Promise<Record<string, unknown>> {
  const text = await readFile(join(import.meta.dirname, "..", "ports", port, "port.yaml"), "utf8");
  return (parse(text) as { reference: { config: Record<string, unknown> } }).reference.config;
}

interface Pair {
  readonly port: string;
  readonly config: Record<string, unknown>;
  readonly a: Record<string, string>;
  readonly b: Record<string, string>;
}

const pairs: Record<string, () => Promise<Pair>> = {
  sparse: async () => ({
    port: "glm-5-mxfp4",
    config: {
      ...(await referenceConfig("glm-5-mxfp4")),
      index_topk: Math.floor(context / Number(args["topk-fraction"])),
    },
    a: { dsa_attention: "dense" },
    b: { dsa_attention: "sparse" },
  }),
  absorbed: async () => ({
    port: "kimi-k2.7-code",
    config: await referenceConfig("kimi-k2.7-code"),
    a: { mla_form: "expanded" },
    b: { mla_form: "absorbed" },
  }),
};

/** Decode tok/s of one request that prefills `context` random tokens and decodes `decode`. */
async function decodeRate(engine: Engine, tokens: number, seed: number): Promise<number> {
  const rng = new Rng(seed);
  const vocab = engine.model.config.vocabSize;
  const prompt = Array.from({ length: tokens }, () => 3 + Math.floor(rng.next() * (vocab - 3)));
  let first = 0;
  let last = 0;
  let n = 0;
  for await (const out of engine.submit({ promptTokenIds: prompt, maxTokens: decode, ignoreEos: true })) {
    if (!out.token) continue;
    last = performance.now();
    if (n === 0) first = last;
    n++;
  }
  return (n - 1) / ((last - first) / 1000);
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

console.log(
  `decode tok/s at ${context} tokens of context, ${decode} tokens, one stream, ${threads} threads, ${blocks} ABBA blocks; ${cpus()[0]?.model ?? "cpu"}`,
);
for (const name of (args.pairs as string).split(",")) {
  const make = pairs[name];
  if (make === undefined) throw new Error(`unknown pair ${name}; pick from ${Object.keys(pairs).join(", ")}`);
  const pair = await make();
  // Kimi K2 and GLM-5 are both the DeepSeek-V3 layout's family.
  const config = { ...pair.config, max_position_embeddings: maxLen };
  const files = deepseekV3Architecture.tinyModel?.(config, corpus, { seed: 0 }) as TinyModelFiles;
  const model = await tinyFilesToModel(pair.port, files);
  const engines = {
    a: new Engine(model, { threads, maxModelLen: maxLen, maxNumSeqs: 1, switches: pair.a }),
    b: new Engine(model, { threads, maxModelLen: maxLen, maxNumSeqs: 1, switches: pair.b }),
  };
  // Warms the JIT on both arms before anything is timed.
  for (const e of Object.values(engines)) await decodeRate(e, 64, 7);
  const samples = { a: [] as number[], b: [] as number[] };
  for (let block = 0; block < blocks; block++) {
    for (const arm of ["a", "b", "b", "a"] as const) {
      const rate = await decodeRate(engines[arm], context, 100 * block + samples[arm].length);
      samples[arm].push(rate);
      process.stderr.write(`  ${name} ${JSON.stringify(pair[arm])}: ${rate.toFixed(2)} tok/s\n`);
    }
  }
  await Promise.all(Object.values(engines).map((e) => e.close()));
  // Each ABBA block's two trials of each arm, compared within their block.
  const trials: BlockTrials[] = Array.from({ length: blocks }, (_, k) => ({
    a: samples.a.slice(2 * k, 2 * k + 2),
    b: samples.b.slice(2 * k, 2 * k + 2),
  }));
  const interval = blockedRatioInterval(trials);
  const verdict = showsNoDifference([interval.low, interval.high]) ? "; no difference was shown" : "";
  console.log(
    `${name}: ${JSON.stringify(pair.a)} ${median(samples.a).toFixed(2)} tok/s, ${JSON.stringify(pair.b)} ${median(samples.b).toFixed(2)} tok/s; B/A ${interval.estimate.toFixed(3)}x [${interval.low.toFixed(3)}, ${interval.high.toFixed(3)}]${verdict}`,
  );
}
