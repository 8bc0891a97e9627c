/**
 * Decode speed across context lengths: GLM-5.3-Flash's tiny reference config (KDA layers with two
 * full-attention layers), the same config with every layer KDA, and the same config with every layer
 * full attention, each at the same sizes, measured in one run on the embedded engine.
 *
 * For each model and context, a request prefills `context` tokens and decodes `decode` more;
 * decode tok/s is timed from its first token to its last, so the prefill is excluded. Rounds repeat
 * the contexts in alternating order (short to long, then long to short) and the median per cell is
 * printed with each context's ratio to the shortest: a KDA layer's state does not grow, so the
 * KDA-only model's ratios should stay near 1 while full attention's fall with the context.
 *
 * Run with --expose-gc (NODE_OPTIONS) so the prefill's garbage is collected before decode is timed.
 *
 *   NODE_OPTIONS=--expose-gc npx tsx bench/kda-decode-contexts.ts [--contexts 1024,8192,32768] [--decode 32] [--rounds 2]
 *     [--threads 2] [--models kda-only,port,full-only] [--record]
 *
 * --record keeps the port's rounds as a single-run record in the local store
 * (.bringup/results/glm-5.3-flash/, gitignored); `bringup records publish glm-5.3-flash` adds it to
 * the published results.
 */
import { readFile } from "node:fs/promises";
import { availableParallelism, cpus } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { measuredRecord, toolVersion } from "../src/bench/index.js";
import { localResultsDir } from "../src/catalog/index.js";
import { Engine, type LoadedModel, modelOfFiles, Rng, readCorpus } from "../src/engine/index.js";
import { glmFlashArchitecture, glmTinyModel } from "../src/engine/models/glm-5.3-flash.js";
import { appendRecord, localServerFingerprint } from "../src/records/index.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  contexts: { type: "string", default: "1024,8192,32768" },
  decode: { type: "string", default: "128" },
  rounds: { type: "string", default: "2" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
  models: { type: "string", default: "kda-only,port,full-only" },
  record: { type: "boolean", default: false },
});
const contexts = (args.contexts as string).split(",").map(Number);
const decode = Number(args.decode);
const rounds = Number(args.rounds);
const threads = Number(args.threads);
const PORT_DIR = join(import.meta.dirname, "..", "ports", "glm-5.3-flash");

const manifest = parse(await readFile(join(PORT_DIR, "port.yaml"), "utf8")) as {
  reference: { config: Record<string, unknown> };
};
const base = manifest.reference.config;
const layers = base.num_hidden_layers as number;
const all = Array.from({ length: layers }, (_, i) => i + 1);
const lin = base.linear_attn_config as Record<string, unknown>;
const variants: Record<string, Record<string, unknown>> = {
  "kda-only": { ...base, linear_attn_config: { ...lin, kda_layers: all, full_attn_layers: [] } },
  port: base,
  "full-only": { ...base, linear_attn_config: { ...lin, kda_layers: [], full_attn_layers: all } },
};
const maxLen = Math.max(...contexts) + decode + 16;
const corpus = await readCorpus();

function build(config: Record<string, unknown>): LoadedModel {
  const files = glmTinyModel({ ...config, max_position_embeddings: maxLen }, corpus, { seed: 0 });
  return modelOfFiles("glm", files, glmFlashArchitecture);
}

const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/**
 * Decode rates of one request that prefills `context` random tokens and decodes `decode`: tokens
 * per second of wall time, and per CPU-second of the process (all threads), which a loaded machine
 * disturbs less.
 */
async function decodeRate(
  engine: Engine,
  context: number,
  seed: number,
): Promise<{ wall: number; cpu: number }> {
  const rng = new Rng(seed);
  const vocab = engine.model.config.vocabSize;
  const prompt = Array.from({ length: context }, () => 3 + Math.floor(rng.next() * (vocab - 3)));
  let first = 0;
  let cpuFirst = 0;
  let last = 0;
  let n = 0;
  for await (const out of engine.submit({ promptTokenIds: prompt, maxTokens: decode, ignoreEos: true })) {
    if (!out.token) continue;
    if (n === 0) {
      // The prefill's garbage is the prefill's cost: collect it before decode is timed.
      (globalThis as { gc?: () => void }).gc?.();
      first = performance.now();
      cpuFirst = cpuSeconds();
    }
    last = performance.now();
    n++;
  }
  return { wall: (n - 1) / ((last - first) / 1000), cpu: (n - 1) / (cpuSeconds() - cpuFirst) };
}

const chosen = (args.models as string).split(",");
const results = new Map<string, { wall: number[][]; cpu: number[][] }>();
console.log(
  `decode tok/s after a prefill, ${decode} tokens, ${threads} threads, ${rounds} rounds; ${cpus()[0]?.model ?? "cpu"}`,
);
for (const name of chosen) {
  const config = variants[name];
  if (config === undefined)
    throw new Error(`unknown model ${name}; pick from ${Object.keys(variants).join(", ")}`);
  const engine = new Engine(build(config), {
    threads,
    maxModelLen: maxLen,
    maxNumSeqs: 1,
    // Decode runs the recurrence either way; the recurrent prefill is the faster one on the CPU.
    switches: { kda_prefill: "recurrent" },
  });
  // Compiles the kernels and warms the JIT before anything is timed.
  await decodeRate(engine, 64, 7);
  const cells = { wall: contexts.map(() => [] as number[]), cpu: contexts.map(() => [] as number[]) };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? contexts.map((_, i) => i) : contexts.map((_, i) => contexts.length - 1 - i);
    for (const i of order) {
      const rate = await decodeRate(engine, contexts[i] as number, 1000 * r + i);
      (cells.wall[i] as number[]).push(rate.wall);
      (cells.cpu[i] as number[]).push(rate.cpu);
      process.stderr.write(
        `  ${name} ${contexts[i]}: ${rate.wall.toFixed(1)} tok/s, ${rate.cpu.toFixed(1)} tok/CPU-s\n`,
      );
    }
  }
  await engine.close();
  results.set(name, cells);
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
for (const unit of ["wall", "cpu"] as const) {
  const per = unit === "wall" ? "tok/s" : "tok/CPU-s";
  console.log(`\n${["model", ...contexts.map((c) => `${c}: ${per} (x of ${contexts[0]})`)].join(" | ")}`);
  for (const [name, cells] of results) {
    const first = median(cells[unit][0] as number[]);
    const row = cells[unit].map((c) => `${median(c).toFixed(1)} (${(median(c) / first).toFixed(3)}x)`);
    console.log([name, ...row].join(" | "));
  }
}

const port = results.get("port");
if (args.record && port !== undefined) {
  const fingerprint = localServerFingerprint({
    software: { model: "glm-5.3-flash-tiny" },
    server_flags: [`--threads=${threads}`, "--switch=kda_prefill=recurrent"],
    tool_version: toolVersion(),
  });
  const record = measuredRecord({
    port: "glm-5.3-flash",
    id: `reference-decode-across-contexts-${new Date().toISOString().slice(0, 10)}`,
    metric: "decode_throughput",
    label: `tiny reference config on the embedded engine: decode tok/s at ${contexts.join(", ")} tokens of context`,
    unit: "tok/s",
    method: "single-run",
    context: `median of ${rounds} rounds per context, ${decode} tokens decoded after each prefill, ${threads} threads (bench/kda-decode-contexts.ts)`,
    command: `npx tsx bench/kda-decode-contexts.ts --contexts ${contexts.join(",")} --record`,
    arms: contexts.map((c, i) => ({
      name: `${c} tokens of context`,
      samples: port.wall[i] as number[],
      fingerprint,
    })),
  });
  const saved = await appendRecord(localResultsDir(join(import.meta.dirname, ".."), "glm-5.3-flash"), record);
  console.log(`\nrecorded ${saved.id}`);
}
