/**
 * Speculative decoding with DeepSeek-V4's MTP layer against plain decode: one stream, greedy, on
 * DeepSeek-V4.1-Flash's tiny reference config (port.yaml), measured in one run on the embedded
 * engine. Three engines serve the same weights: `off` (no drafting), `mtp` (the checkpoint's MTP
 * layer drafts k tokens a step) and `planted` (the MTP layer runs as in `mtp`, but each draft is
 * the target's own next greedy token: test/helpers/planted-drafts.ts). The tiny reference (the
 * default, `--model tiny`) is untrained, so no prompt is one it continues predictably in the sense a
 * trained model does: its MTP layer's
 * drafts are almost never the target's, and `mtp` measures what drafting costs when nothing is
 * kept; `planted` keeps every draft (acceptance 1), the most the engine's one-step verification
 * can give at this k. The prompt is fair to both in the only way open here: it is the same corpus
 * text for every arm, and every arm must emit the same tokens (checked) from the same greedy
 * decode.
 *
 * `--model retrieval` runs the same arms on the port's retrieval variant instead (v4RetrievalModel:
 * the engine's copy circuit in V4's attention, tiny/v4-copy-circuit.ts), whose MTP layer is built to
 * draft by the same copying, one token further. Its prompt is a passage of corpus text repeated
 * (`--passage` tokens, default half the prompt), so the model continues it predictably: the
 * variant copies what followed the earlier occurrence of the current n-gram, and its MTP layer
 * drafts the token after that. This is the reason a trained model's MTP head is accepted on copied
 * text (quoted code, a document restated, a repeated list): the draft comes from the context, not
 * from knowledge the small head lacks. It is fair as a prompt "the model continues predictably"
 * (the issue's condition) and no fairer: on text that does not repeat, the variant's drafts and its
 * greedy tokens are both noise, and drafting only costs. The variant keeps the port's layout (four
 * layers, their MoE, one MTP layer), so the draft head costs what the port's does against the main
 * model: the silenced layers and experts compute as ever, only their outputs are zero.
 *
 * Each trial prefills the prompt and decodes `decode` tokens; decode tok/s is timed from the first
 * token to the last (the prefill excluded). Blocks run the arms off, mtp, planted, planted, mtp,
 * off, then reversed, so drift falls on no arm; each pair's ratio comes with its 95% interval
 * (blockedRatioInterval). Acceptance is the engine's spec-decode counters over the timed trials.
 *
 *   npx tsx bench/mtp-drafting.ts [--model tiny|retrieval] [--prompt 256] [--passage N] [--decode 64] [--k 3] [--blocks 4] [--threads 2] [--record]
 *
 * --record keeps the `mtp` against `off` A/B as a same-pod-ab record in the local store
 * (.bringup/results/deepseek-v4.1-flash/, gitignored), its context naming acceptance and the planted
 * ceiling; `bringup records publish deepseek-v4.1-flash` adds it to the published results.
 */
import { availableParallelism, cpus, loadavg } from "node:os";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/index.js";
import type { LayerStorage } from "../src/engine/cache/storage.js";
import { Engine, type LoadedModel } from "../src/engine/index.js";
import type { CausalLM } from "../src/engine/model/causal-lm.js";
import { isDraftModel } from "../src/engine/model/draft-model.js";
import type { ForwardContext } from "../src/engine/model/model.js";
import { v4RetrievalModel } from "../src/engine/models/deepseek-v4.js";
import { abVerdict } from "../src/records/interval.js";
import { plantedDrafts } from "../test/helpers/planted-drafts.js";
import { benchArgs } from "./args.js";
import { recordV4Ab, V4_PORT, v4Files, v4Model, v4Reference } from "./v4-tiny.js";

const args = benchArgs(import.meta.url, {
  model: { type: "string", default: "tiny" },
  passage: { type: "string" },
  prompt: { type: "string", default: "256" },
  decode: { type: "string", default: "64" },
  k: { type: "string", default: "3" },
  blocks: { type: "string", default: "4" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
  record: { type: "boolean", default: false },
});
const promptTokens = Number(args.prompt);
const decode = Number(args.decode);
const k = Number(args.k);
const blockCount = Number(args.blocks);
const threads = Number(args.threads);

const { config, switches, corpus } = await v4Reference();
const variant = args.model;
if (variant !== "tiny" && variant !== "retrieval")
  throw new Error(`--model is tiny or retrieval, got ${variant}`);
const retrieval = variant === "retrieval";
const model: LoadedModel = v4Model(
  retrieval
    ? v4RetrievalModel(config, corpus, { maxPositionEmbeddings: 4096, seed: 0, port: V4_PORT })
    : v4Files(config, corpus),
  variant,
);
const text = model.tokenizer.encode(corpus.slice(0, promptTokens * 8));
const passageTokens = Number(args.passage ?? Math.floor(promptTokens / 2));
// The retrieval variant's prompt: one passage again and again, cut at promptTokens.
const prompt = retrieval
  ? Array.from({ length: promptTokens }, (_, i) => text[i % passageTokens] as number)
  : text.slice(0, promptTokens);
const promptDescription = retrieval
  ? `${promptTokens}-token prompt of a ${passageTokens}-token corpus passage repeated, on the retrieval variant`
  : `${promptTokens}-token corpus prompt`;
const common = {
  threads,
  maxModelLen: promptTokens + decode + k + 16,
  maxNumSeqs: 1,
  switches,
};
const request = { promptTokenIds: prompt, maxTokens: decode, sampling: { temperature: 0 }, ignoreEos: true };

/** Decode tok/s of one request (first token to last) and the tokens it emitted. */
async function trial(engine: Engine): Promise<{ rate: number; tokens: number[] }> {
  const tokens: number[] = [];
  let first = 0;
  let last = 0;
  for await (const out of engine.submit(request)) {
    if (!out.token) continue;
    if (tokens.length === 0) first = performance.now();
    last = performance.now();
    tokens.push(out.token.tokenId);
  }
  return { rate: (tokens.length - 1) / ((last - first) / 1000), tokens };
}

/** Wall time of the target's and the draft head's steps, by arm, part and tokens in the step. */
const stepTimes = new Map<string, { calls: number; ms: number }>();
function timed<T>(key: string, run: () => T): T {
  const start = performance.now();
  const out = run();
  const s = stepTimes.get(key) ?? { calls: 0, ms: 0 };
  stepTimes.set(key, { calls: s.calls + 1, ms: s.ms + performance.now() - start });
  return out;
}
const meanStep = (key: string) => {
  const s = stepTimes.get(key);
  return s === undefined ? Number.NaN : s.ms / s.calls;
};

/** `m` with its target's and draft head's steps timed under `arm` (the same work, a clock read around it). */
function timedSteps(m: LoadedModel, arm: string): LoadedModel {
  const head = m.model.drafter;
  const withHead = isDraftModel(head)
    ? m.model.withDrafter({
        states: (switches) => head.states(switches),
        forward: (ctx, storage, previous) =>
          timed(`${arm} draft ${ctx.batch.tokens.length}`, () => head.forward(ctx, storage, previous)),
      })
    : m.model;
  const target: CausalLM = Object.create(withHead, {
    step: {
      value: (ctx: ForwardContext, storage: readonly LayerStorage[]) =>
        timed(`${arm} target ${ctx.batch.tokens.length}`, () => withHead.step(ctx, storage)),
    },
  });
  return { ...m, model: target };
}

const off = new Engine(timedSteps(model, "off"), common);
const { tokens: reference } = await trial(off);
const arms = {
  off,
  mtp: new Engine(timedSteps(model, "mtp"), { ...common, speculativeTokens: k }),
  planted: new Engine(timedSteps(plantedDrafts(model, [[...prompt, ...reference]]), "planted"), {
    ...common,
    speculativeTokens: k,
  }),
};
type Arm = keyof typeof arms;
// Compiles the kernels and warms the JIT before anything is timed.
for (const engine of Object.values(arms)) await trial(engine);
stepTimes.clear();
const before = Object.fromEntries(
  Object.entries(arms).map(([name, e]) => [name, e.stats().specDecode]),
) as Record<Arm, ReturnType<Engine["stats"]>["specDecode"]>;

const samples: Record<Arm, number[][]> = { off: [], mtp: [], planted: [] };
const load = loadavg()[0] as number;
console.log(
  `one stream, greedy, ${promptDescription}, ${decode} tokens decoded, k = ${k}, ${threads} threads, ${blockCount} blocks; ${cpus()[0]?.model ?? "cpu"}; load ${load.toFixed(2)}`,
);
for (let b = 0; b < blockCount; b++) {
  const forward: Arm[] = ["off", "mtp", "planted", "planted", "mtp", "off"];
  const order = b % 2 === 0 ? forward : [...forward].reverse();
  const block: Record<Arm, number[]> = { off: [], mtp: [], planted: [] };
  for (const arm of order) {
    const { rate, tokens } = await trial(arms[arm]);
    if (tokens.join() !== reference.join())
      throw new Error(`arm ${arm} emitted other tokens than plain decode`);
    block[arm].push(rate);
  }
  for (const arm of Object.keys(block) as Arm[]) samples[arm].push(block[arm]);
  process.stderr.write(
    `  block ${b + 1}: ${(Object.keys(block) as Arm[]).map((a) => `${a} ${block[a].map((r) => r.toFixed(1)).join(", ")}`).join("; ")} tok/s\n`,
  );
}

function acceptance(arm: Arm): { rate: number; accepted: number; drafted: number } {
  const now = arms[arm].stats().specDecode;
  const accepted = (now?.numAcceptedTokens ?? 0) - (before[arm]?.numAcceptedTokens ?? 0);
  const drafted = (now?.numDraftTokens ?? 0) - (before[arm]?.numDraftTokens ?? 0);
  return { rate: drafted === 0 ? 0 : accepted / drafted, accepted, drafted };
}
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
const results = (["mtp", "planted"] as const).map((arm) => {
  const blocks: BlockTrials[] = samples.off.map((a, i) => ({ a, b: samples[arm][i] as number[] }));
  const interval = blockedRatioInterval(blocks);
  const ratios = blocks.map((x) => median(x.b) / median(x.a));
  return { arm, interval, ratios, acceptance: acceptance(arm) };
});
console.log(`off: median ${median(samples.off.flat()).toFixed(1)} tok/s`);
for (const { arm, interval, acceptance: acc } of results) {
  console.log(
    `${arm}: median ${median(samples[arm].flat()).toFixed(1)} tok/s, acceptance ${(acc.rate * 100).toFixed(1)}% (${acc.accepted}/${acc.drafted}); ${arm}/off ${interval.estimate.toFixed(3)}x, 95% interval ${interval.low.toFixed(3)}x to ${interval.high.toFixed(3)}x (df ${interval.df}): ${abVerdict([interval.low, interval.high])}`,
  );
}
// What a drafting step costs against a plain one: the target's verification of k + 1 tokens against
// one token, and the draft head over the k + 1 verified positions and over one.
const steps = `mean step times over the timed trials: the target ${meanStep("off target 1").toFixed(2)} ms for one token and ${meanStep(`mtp target ${k + 1}`).toFixed(2)} ms verifying ${k + 1}; the draft head ${meanStep(`mtp draft ${k + 1}`).toFixed(2)} ms over ${k + 1} positions and ${meanStep("mtp draft 1").toFixed(2)} ms for one`;
console.log(steps);
for (const engine of Object.values(arms)) await engine.close();

const mtp = results[0];
const planted = results[1];
if (args.record && mtp !== undefined && planted !== undefined) {
  console.log("");
  await recordV4Ab({
    id: `reference-drafting-ab${retrieval ? "-retrieval" : ""}-k${k}-${new Date().toISOString().slice(0, 10)}`,
    variant,
    metric: "decode_tok_s",
    label: `decode tokens per second of one greedy stream, MTP drafting ${k} tokens a step against none${retrieval ? ", on a repeated passage (retrieval variant)" : ""}`,
    context: `${blockCount} blocks of 2 trials per arm; ${promptDescription}, ${decode} tokens decoded, load ${load.toFixed(2)} at the start (bench/mtp-drafting.ts${retrieval ? " --model retrieval: the copy circuit's MTP layer drafts the copied continuation" : ""}). The ${retrieval ? "constructed" : "untrained"} MTP layer's acceptance: ${(mtp.acceptance.rate * 100).toFixed(1)}% (${mtp.acceptance.accepted}/${mtp.acceptance.drafted}). With the target's own tokens planted as drafts (acceptance ${(planted.acceptance.rate * 100).toFixed(1)}%), the ceiling at this k: ${planted.interval.estimate.toFixed(3)}x, 95% interval ${planted.interval.low.toFixed(3)}x to ${planted.interval.high.toFixed(3)}x. ${steps[0]?.toUpperCase()}${steps.slice(1)}.`,
    command: `npx tsx bench/mtp-drafting.ts${retrieval ? ` --model retrieval --passage ${passageTokens}` : ""} --prompt ${promptTokens} --decode ${decode} --k ${k} --blocks ${blockCount} --record`,
    flags: [`--threads=${threads}`, "--switch=v4_attention=sparse"],
    arms: [
      { name: "no drafting", samples: samples.off.flat(), flags: [] },
      { name: `MTP drafting, k = ${k}`, samples: samples.mtp.flat(), flags: [`--speculative-tokens=${k}`] },
    ],
    interval: mtp.interval,
    ratios: mtp.ratios,
  });
}
