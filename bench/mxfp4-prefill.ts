/**
 * The MXFP4 matmul's three forms on one weight, in one process, trials interleaved:
 *
 * - in-loop: matmul/mxfp4-rows.wat's mxfp4 decodes each block straight into the multiply-adds, once
 *   per input row;
 * - scratch: matmul/mxfp4-decode.wat writes a chunk of rows to scratch once, then the f32 tile runs over them
 *   (the pool picks it from KernelSwitches.mxfp4ScratchTokens input rows);
 * - unpacked: the rows unpacked to f32 by the JavaScript loop, then the tile (BRINGUP_ENGINE_MXFP4=unpacked).
 *
 * All three give the same bits (checked here on every token count). For each token count, each
 * block runs the arms in the order A B C C B A (so two trials each), and each pair of arms' ratio of
 * tokens/s comes with its 95% interval from the trials paired within their blocks.
 *
 *   npx tsx bench/mxfp4-prefill.ts [--rows 2880] [--cols 2880] [--tokens 1,4,8,16,64,512]
 *     [--blocks 4] [--threads 2]
 */
import { availableParallelism } from "node:os";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/index.js";
import { MatmulPool } from "../src/engine/kernels/pool.js";
import { Rng } from "../src/engine/tensor/random.js";
import { shareArray, type Weight } from "../src/engine/tensor/weight.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  rows: { type: "string", default: "2880" },
  cols: { type: "string", default: "2880" },
  tokens: { type: "string", default: "1,4,8,16,64,512" },
  blocks: { type: "string", default: "4" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
});
const N = Number(args.rows);
const K = Number(args.cols);
const threads = Number(args.threads);
const blocks = Number(args.blocks);

const rng = new Rng(3);
const weight: Weight = {
  dtype: "mxfp4",
  rows: N,
  cols: K,
  data: shareArray(Uint8Array.from({ length: (N * K) / 2 }, () => rng.nextU32() & 255)),
  mxScales: shareArray(Uint8Array.from({ length: (N * K) / 32 }, () => 118 + (rng.nextU32() % 8))),
};
const arms = [
  { name: "in-loop", pool: new MatmulPool(threads, { mxfp4ScratchTokens: Number.POSITIVE_INFINITY }) },
  { name: "scratch", pool: new MatmulPool(threads, { mxfp4ScratchTokens: 1 }) },
  { name: "unpacked", pool: new MatmulPool(threads, { mxfp4: "unpacked" }) },
];

/** Tokens/s of one matmul of M input rows, repeated to at least 0.2 s. */
function trial(pool: MatmulPool, x: Float32Array, M: number, out: Float32Array): number {
  const start = performance.now();
  let runs = 0;
  do {
    pool.matmul(x, M, weight, out);
    runs += 1;
  } while (performance.now() - start < 200);
  return (runs * M) / ((performance.now() - start) / 1000);
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

console.log(`MXFP4 [${N}, ${K}], ${threads} threads, ${blocks} blocks of A B C C B A per token count`);
for (const M of (args.tokens as string).split(",").map(Number)) {
  const x = rng.fillNormal(new Float32Array(M * K), 1);
  const outs = arms.map(() => new Float32Array(M * N));
  // A warm-up trial of each arm (compiles the kernels' hot paths, grows their scratch).
  arms.forEach((arm, i) => {
    trial(arm.pool, x, M, outs[i] as Float32Array);
  });
  const bits = outs.map((o) => Buffer.from(o.buffer));
  if (!bits.every((b) => b.equals(bits[0] as Buffer)))
    throw new Error(`the arms' outputs differ at ${M} tokens`);
  const samples = arms.map(() => [] as number[][]);
  for (let b = 0; b < blocks; b += 1) {
    const block = arms.map(() => [] as number[]);
    for (const i of [0, 1, 2, 2, 1, 0]) {
      const arm = arms[i] as (typeof arms)[number];
      (block[i] as number[]).push(trial(arm.pool, x, M, outs[i] as Float32Array));
    }
    block.forEach((trials, i) => {
      (samples[i] as number[][]).push(trials);
    });
    console.log(
      `  ${M} tokens, block ${b + 1}: ${arms.map((arm, i) => `${arm.name} ${(block[i] as number[]).map((t) => t.toFixed(0)).join("/")}`).join(", ")} tok/s`,
    );
  }
  const ratio = (a: number, b: number) => {
    const trials: BlockTrials[] = (samples[a] as number[][]).map((ta, k) => ({
      a: ta,
      b: (samples[b] as number[][])[k] as number[],
    }));
    const r = blockedRatioInterval(trials);
    return `${(arms[b] as { name: string }).name}/${(arms[a] as { name: string }).name} ${r.estimate.toFixed(3)}x [${r.low.toFixed(3)}, ${r.high.toFixed(3)}]`;
  };
  const medians = arms.map((arm, i) => `${arm.name} ${median((samples[i] as number[][]).flat()).toFixed(0)}`);
  console.log(
    `${M} tokens: medians ${medians.join(", ")} tok/s; ${ratio(0, 1)}; ${ratio(2, 1)}; ${ratio(2, 0)}`,
  );
}
await Promise.all(arms.map((arm) => arm.pool.close()));
