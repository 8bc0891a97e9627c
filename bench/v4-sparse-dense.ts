/**
 * DeepSeek-V4's sparse attention against dense attention of the same weights: the tiny reference
 * config (port.yaml) on two engines in one process, `v4_attention=dense` (A) and `sparse` (B), one
 * greedy stream each, corpus text as the prompt. Two A/Bs, each B/A ratio with its 95% interval
 * (blockedRatioInterval) and verdict:
 *
 * - decode at a `--context`-token context (the issue's 16K). A dense prefill of 16K costs minutes
 *   on two cores, so each arm prefills once: sparse first, then dense (while dense prefills, sparse
 *   decodes a step per dense chunk: a few tokens), then both decode with their steps interleaved,
 *   one of each in turn on the same thread (each engine yields between steps). A step's time is
 *   from the previous step's end (either arm's) to its own token, so drift falls on both arms
 *   alike. After `--warm` steps each, every block holds 2 trials per arm of `--steps` steps.
 * - prefill at `--prefill-context` tokens (the tiny config's longest, max_model_len 4096): tok/s
 *   from submit to first token, a fresh request per trial, in blocks ABBA, BAAB, ...
 *
 * Past the tiny config's max_model_len the bench raises max_position_embeddings to fit the
 * context. That is fair to both arms and changes no weight: rope_scaling is null, so the field only
 * caps positions (and the tokenizer's model_max_length); the bench checks every tensor is the same
 * bytes as the port's config draws.
 *
 *   npx tsx bench/v4-sparse-dense.ts [--context 16384] [--steps 16] [--blocks 4] [--warm 8]
 *     [--prefill-context 4032] [--prefill-blocks 3] [--only decode|prefill] [--threads 2] [--record]
 *
 * --record keeps each A/B as a same-pod-ab record in the local store
 * (.bringup/results/deepseek-v4.1-flash/, gitignored), `reference-decode-sparse-ab-<context>-<start>`
 * and `reference-prefill-sparse-ab-<prefill context>-<start>` (start: yyyymmddThhmm, UTC);
 * `bringup records publish deepseek-v4.1-flash` adds them to the published results.
 */
import { availableParallelism, cpus, loadavg } from "node:os";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/index.js";
import { Engine } from "../src/engine/index.js";
import { abVerdict } from "../src/records/interval.js";
import { benchArgs } from "./args.js";
import { V4_PORT as PORT, recordV4Ab, v4Files, v4Model, v4Reference } from "./v4-tiny.js";

const args = benchArgs(import.meta.url, {
  context: { type: "string", default: "16384" },
  steps: { type: "string", default: "16" },
  blocks: { type: "string", default: "4" },
  warm: { type: "string", default: "8" },
  "prefill-context": { type: "string", default: "4032" },
  "prefill-blocks": { type: "string", default: "3" },
  only: { type: "string", default: "" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
  record: { type: "boolean", default: false },
});
const context = Number(args.context);
const steps = Number(args.steps);
const blockCount = Number(args.blocks);
const warm = Number(args.warm);
const prefillContext = Number(args["prefill-context"]);
const prefillBlocks = Number(args["prefill-blocks"]);
const threads = Number(args.threads);
if (!["", "decode", "prefill"].includes(args.only))
  throw new Error(`--only takes decode or prefill (or nothing, for both), got ${args.only}`);
const decodeTokens = warm + 2 * steps * blockCount + 64;

const { config: portConfig, switches, corpus } = await v4Reference();
const contexts = [
  ...(args.only !== "prefill" ? [context] : []),
  ...(args.only !== "decode" ? [prefillContext] : []),
];
const maxModelLen = Math.max(...contexts) + decodeTokens + 8;
const config = {
  ...portConfig,
  max_position_embeddings: Math.max(portConfig.max_position_embeddings as number, maxModelLen),
};
const files = v4Files(config, corpus);
for (const [name, t] of v4Files(portConfig, corpus).tensors) {
  const got = files.tensors.get(name);
  if (got === undefined || Buffer.compare(Buffer.from(got.data.buffer), Buffer.from(t.data.buffer)) !== 0)
    throw new Error(`raising max_position_embeddings changed tensor ${name}`);
}
const model = v4Model(files);
const raised =
  config.max_position_embeddings > (portConfig.max_position_embeddings as number)
    ? `, max_position_embeddings raised to ${config.max_position_embeddings} (rope_scaling null: no weight changes, checked)`
    : "";
const text = model.tokenizer.encode(corpus.slice(0, 8 * 4096));
/** The first `n` tokens of the corpus, repeated as far as `n` needs. */
const promptOf = (n: number) => Array.from({ length: n }, (_, i) => text[i % text.length] as number);
const greedy = { sampling: { temperature: 0 }, ignoreEos: true };
const engineOf = (attention: string) =>
  new Engine(model, {
    threads,
    maxModelLen,
    maxNumSeqs: 1,
    switches: { ...switches, v4_attention: attention },
  });
const arms = { dense: engineOf("dense"), sparse: engineOf("sparse") };
type Arm = keyof typeof arms;

// Compiles the kernels and warms the JIT on a short prompt before anything is timed.
for (const engine of Object.values(arms))
  for await (const _ of engine.submit({ promptTokenIds: promptOf(256), maxTokens: 8, ...greedy }));
const load = loadavg()[0] as number;
const started = Date.now();
console.log(
  `${PORT} tiny, one greedy stream per arm, ${threads} threads (A dense, B sparse); ${cpus()[0]?.model ?? "cpu"}; load ${load.toFixed(2)}`,
);

interface Result {
  readonly figure: "decode" | "prefill";
  readonly context: number;
  readonly interval: ReturnType<typeof blockedRatioInterval>;
  readonly blocks: readonly BlockTrials[];
  readonly detail: string;
}

/** The interleaved decode A/B (see the header): blocks of 2 trials of `steps` steps per arm. */
async function decodeAb(): Promise<Result> {
  const events: { arm: Arm; at: number }[] = [];
  const firstToken: Partial<Record<Arm, number>> = {};
  const consume = async (arm: Arm, then?: () => Promise<void>) => {
    let next: Promise<void> | undefined;
    const request = { promptTokenIds: promptOf(context), maxTokens: decodeTokens, ...greedy };
    for await (const out of arms[arm].submit(request)) {
      if (!out.token) continue;
      events.push({ arm, at: performance.now() });
      if (firstToken[arm] === undefined) {
        firstToken[arm] = events.length - 1;
        next = then?.();
      }
    }
    await next;
  };
  await consume("sparse", () => consume("dense"));
  // Both arms decode from the dense arm's first token on; a step lasts from the previous event.
  const from = firstToken.dense as number;
  const durations: Record<Arm, number[]> = { dense: [], sparse: [] };
  const seen: Record<Arm, number> = { dense: 0, sparse: 0 };
  // Until the sparse arm's last token: past it the dense arm's steps are no longer interleaved.
  const end = events.map((e) => e.arm).lastIndexOf("sparse");
  for (let i = from + 1; i <= end; i++) {
    const { arm, at } = events[i] as { arm: Arm; at: number };
    if (seen[arm]++ >= warm) durations[arm].push(at - (events[i - 1] as { at: number }).at);
  }
  const need = 2 * steps * blockCount;
  for (const arm of ["dense", "sparse"] as const)
    if (durations[arm].length < need)
      throw new Error(`the ${arm} arm decoded ${durations[arm].length} timed steps, fewer than ${need}`);
  const rate = (arm: Arm, trial: number) =>
    steps / (durations[arm].slice(trial * steps, (trial + 1) * steps).reduce((s, d) => s + d, 0) / 1000);
  const blocks = Array.from({ length: blockCount }, (_, b) => ({
    a: [rate("dense", 2 * b), rate("dense", 2 * b + 1)],
    b: [rate("sparse", 2 * b), rate("sparse", 2 * b + 1)],
  }));
  const sparseAhead = (firstToken.dense as number) - (firstToken.sparse as number);
  return {
    figure: "decode",
    context,
    interval: blockedRatioInterval(blocks),
    blocks,
    detail: `each arm prefilled ${context} tokens once, then ${warm} untimed steps and ${blockCount} blocks of 2 trials of ${steps} decode steps, the arms' steps interleaved; the sparse arm was ${sparseAhead} tokens ahead of the dense one`,
  };
}

/** The prefill A/B: a fresh request per trial, blocks ABBA, BAAB, ... */
async function prefillAb(): Promise<Result> {
  const trial = async (arm: Arm) => {
    const start = performance.now();
    for await (const out of arms[arm].submit({
      promptTokenIds: promptOf(prefillContext),
      maxTokens: 1,
      ...greedy,
    }))
      if (out.token) return prefillContext / ((performance.now() - start) / 1000);
    throw new Error(`the ${arm} arm gave no token`);
  };
  const blocks: BlockTrials[] = [];
  for (let b = 0; b < prefillBlocks; b++) {
    const order: Arm[] =
      b % 2 === 0 ? ["dense", "sparse", "sparse", "dense"] : ["sparse", "dense", "dense", "sparse"];
    const got: Record<Arm, number[]> = { dense: [], sparse: [] };
    for (const arm of order) got[arm].push(await trial(arm));
    blocks.push({ a: got.dense, b: got.sparse });
  }
  return {
    figure: "prefill",
    context: prefillContext,
    interval: blockedRatioInterval(blocks),
    blocks,
    detail: `${prefillBlocks} blocks (ABBA, BAAB) of a ${prefillContext}-token prefill per trial, timed from submit to the first token`,
  };
}

const results: Result[] = [];
if (args.only !== "prefill") results.push(await decodeAb());
if (args.only !== "decode") results.push(await prefillAb());
await Promise.all(Object.values(arms).map((e) => e.close()));

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
for (const { figure, context: at, interval, blocks, detail } of results) {
  const dense = mean(blocks.flatMap((x) => x.a));
  const sparse = mean(blocks.flatMap((x) => x.b));
  console.log(`${figure} at ${at} tokens: ${detail}`);
  blocks.forEach((x, i) => {
    console.log(
      `  block ${i + 1}: dense ${x.a.map((r) => r.toFixed(2)).join(", ")}; sparse ${x.b.map((r) => r.toFixed(2)).join(", ")} tok/s`,
    );
  });
  console.log(
    `${figure} tok/s: dense ${dense.toFixed(2)}, sparse ${sparse.toFixed(2)}; sparse/dense ${interval.estimate.toFixed(3)}x, 95% interval ${interval.low.toFixed(3)}x to ${interval.high.toFixed(3)}x (df ${interval.df}): ${abVerdict([interval.low, interval.high])}`,
  );
}

if (args.record) {
  // Records are never rewritten: each run's ids carry its start, to the minute.
  const stamp = new Date(started).toISOString().slice(0, 16).replace(/[-:]/g, "").toLowerCase();
  for (const { figure, context: at, interval, blocks, detail } of results) {
    await recordV4Ab({
      id: `reference-${figure}-sparse-ab-${at}-${stamp}`,
      metric: `${figure}_tok_s`,
      label: `${figure} tokens per second of one greedy stream at a ${at}-token context, V4 sparse attention against dense attention of the same weights`,
      context: `${detail}; ${threads} threads, load ${load.toFixed(2)} at the start (bench/v4-sparse-dense.ts). max_model_len ${maxModelLen}${raised}.`,
      command: `npx tsx bench/v4-sparse-dense.ts --only ${figure} --context ${context} --steps ${steps} --blocks ${blockCount} --prefill-context ${prefillContext} --prefill-blocks ${prefillBlocks} --record`,
      flags: [`--threads=${threads}`, `--max-model-len=${maxModelLen}`],
      arms: [
        {
          name: "dense attention",
          samples: blocks.flatMap((x) => x.a),
          flags: ["--switch=v4_attention=dense"],
        },
        {
          name: "V4 sparse attention",
          samples: blocks.flatMap((x) => x.b),
          flags: ["--switch=v4_attention=sparse"],
        },
      ],
      interval,
      ratios: blocks.map((x) => mean(x.b) / mean(x.a)),
    });
  }
}
