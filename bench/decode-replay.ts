/**
 * Decoder replay against the unplanned decode step: a port's tiny reference model on two engines in
 * one process, `replay=off` (A) and `replay=on` (B), measured in balanced blocks (ABBA, then BAAB,
 * alternating) so the machine's drift falls on neither arm. A trial sends `--streams` greedy
 * requests at once, each a `--prompt`-token slice of the corpus decoding `--decode` tokens, and
 * times decode from the step that gave every stream its first token to the last token: tokens per
 * second of wall time and per CPU-second of the process (all threads), which a loaded machine
 * disturbs less. Prints each block's B/A ratio, then per figure the ratio with its 95% interval
 * (blockedRatioInterval: trials compared within their block) and abVerdict's verdict. Both arms
 * must decode the same tokens (the run stops otherwise).
 *
 *   npx tsx bench/decode-replay.ts [--port deepseek-v4.1-flash] [--streams 1] [--prompt 200]
 *     [--decode 128] [--blocks 6] [--threads 2] [--record]
 *
 * --record (deepseek-v4.1-flash only) keeps the wall-time ratio as a same-pod-ab record in the local
 * store, the CPU-time ratio in its context (bench/v4-tiny.ts recordV4Ab).
 */
import { availableParallelism, loadavg } from "node:os";
import { type BlockTrials, blockedRatioInterval, type RatioInterval } from "../src/bench/stats.js";
import { Engine } from "../src/engine/index.js";
import { abVerdict } from "../src/records/interval.js";
import { portReference } from "../test/helpers/port-reference.js";
import { benchArgs } from "./args.js";
import { streamRates } from "./stream-rates.js";
import { recordV4Ab, V4_PORT } from "./v4-tiny.js";

const args = benchArgs(import.meta.url, {
  port: { type: "string", default: "deepseek-v4.1-flash" },
  streams: { type: "string", default: "1" },
  prompt: { type: "string", default: "200" },
  decode: { type: "string", default: "128" },
  blocks: { type: "string", default: "6" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
  record: { type: "boolean", default: false },
});
if (args.record && args.port !== V4_PORT) throw new Error(`--record keeps records of ${V4_PORT} only`);
const streams = Number(args.streams);
const promptTokens = Number(args.prompt);
const decodeTokens = Number(args.decode);
const blockCount = Number(args.blocks);
const threads = Number(args.threads);

const ref = await portReference(args.port);
const model = ref.referenceModel();
const text = model.tokenizer.encode(ref.corpus.slice(0, 40 * (promptTokens + streams)));
const prompts = Array.from({ length: streams }, (_, i) => text.slice(i, i + promptTokens));
const engineOf = (replay: string) =>
  new Engine(model, {
    threads,
    maxNumSeqs: streams,
    maxModelLen: promptTokens + decodeTokens + 8,
    switches: { replay },
  });
const engines = { off: engineOf("off"), on: engineOf("on") };

/** One trial: every stream's decode rate together (stream-rates.ts), and the tokens they gave. */
async function measure(engine: Engine): Promise<{ decode: number; decodeCpu: number; tokens: string }> {
  const { decode, decodeCpu, tokens } = await streamRates(engine, prompts, decodeTokens);
  return { decode, decodeCpu, tokens: JSON.stringify(tokens) };
}

for (const e of Object.values(engines)) await measure(e); // warm-up: JIT, kernels, plans
const load = loadavg()[0] as number;
const KEYS = ["decode", "decodeCpu"] as const;
const blocks = { decode: [] as BlockTrials[], decodeCpu: [] as BlockTrials[] };
console.log(
  `${args.port}: ${streams} streams, prompt ${promptTokens}, decode ${decodeTokens}, ${threads} threads, ${blockCount} blocks (ABBA, BAAB, ...; A replay=off, B replay=on)`,
);
const mean = (xs: readonly number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
let expected: string | undefined;
for (let b = 0; b < blockCount; b++) {
  const order = (b % 2 === 0 ? ["off", "on", "on", "off"] : ["on", "off", "off", "on"]) as ("off" | "on")[];
  const got: Record<"off" | "on", Awaited<ReturnType<typeof measure>>[]> = { off: [], on: [] };
  for (const arm of order) {
    const rates = await measure(engines[arm]);
    expected ??= rates.tokens;
    if (rates.tokens !== expected) throw new Error(`replay=${arm} decoded other tokens than the first trial`);
    got[arm].push(rates);
  }
  const line = KEYS.map((k) => {
    const trials = { a: got.off.map((r) => r[k]), b: got.on.map((r) => r[k]) };
    blocks[k].push(trials);
    return `${k} ${mean(trials.a).toFixed(1)} -> ${mean(trials.b).toFixed(1)} (${(mean(trials.b) / mean(trials.a)).toFixed(3)}x)`;
  });
  console.log(`block ${b + 1} (${order.map((a) => (a === "off" ? "A" : "B")).join("")}): ${line.join(", ")}`);
}
const counts = engines.on.replayCounts;
await Promise.all(Object.values(engines).map((e) => e.close()));
console.log(`replay=on planned ${counts.plans} decode shapes and replayed ${counts.replayedSteps} steps`);
console.log("tok/s of wall time (decode) and tok per CPU-second (decodeCpu), every stream's tokens counted");
for (const key of KEYS) {
  const { estimate, low, high, df } = blockedRatioInterval(blocks[key]);
  console.log(
    `${key} on/off: ${estimate.toFixed(3)}x, 95% interval ${low.toFixed(3)}x to ${high.toFixed(3)}x (df ${df}): ${abVerdict([low, high])}`,
  );
}

if (args.record) {
  const [wall, cpu] = KEYS.map((key) => blockedRatioInterval(blocks[key])) as [RatioInterval, RatioInterval];
  const command = `npx tsx bench/decode-replay.ts --streams ${streams} --prompt ${promptTokens} --decode ${decodeTokens} --blocks ${blockCount} --threads ${threads} --record`;
  await recordV4Ab({
    id: `reference-decode-replay-ab-in-process-${streams}`,
    metric: "decode_tok_s",
    label: `decode tokens per second of wall time, ${streams} greedy stream(s), decoder replay against the unplanned decode step, in one process`,
    context: `${blockCount} blocks (ABBA, BAAB, ...) of 2 trials per arm, both engines in one process; prompt ${promptTokens}, ${decodeTokens} tokens decoded, ${threads} threads, load ${load.toFixed(2)} after the warm-up (bench/decode-replay.ts). Per CPU-second: ${cpu.estimate.toFixed(3)}x, 95% interval ${cpu.low.toFixed(3)}x to ${cpu.high.toFixed(3)}x. replay=on planned ${counts.plans} decode shapes and replayed ${counts.replayedSteps} steps; both arms decoded the same tokens.`,
    command,
    flags: [`--threads=${threads}`],
    arms: [
      {
        name: "unplanned decode step",
        samples: blocks.decode.flatMap((b) => b.a),
        flags: ["--switch=replay=off"],
      },
      { name: "decoder replay", samples: blocks.decode.flatMap((b) => b.b), flags: ["--switch=replay=on"] },
    ],
    interval: wall,
    ratios: blocks.decode.map((b) => mean(b.b) / mean(b.a)),
  });
}
