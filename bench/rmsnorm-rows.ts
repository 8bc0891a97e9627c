/**
 * RMSNorm of a decode step's rows on the calling thread: the plain loops (rmsNormPlain: A) against
 * rmsNorm, which runs vector.wat's rms_norm where the rows lie in the kernels' shared memory (B), at
 * --rows rows of --dim (16 x 768: a 16-stream bench-100m step; 1: batch 1), in balanced blocks
 * (ABBA, then BAAB), each trial's rate over the process's CPU time. Prints per block the rates, then
 * B/A with its 95% interval (blockedRatioInterval) and abVerdict's verdict. Both arms must give the
 * same bits (the run stops otherwise).
 *
 *   npx tsx bench/rmsnorm-rows.ts [--rows 16] [--dim 768] [--blocks 10] [--calls 5000]
 */
import { loadavg } from "node:os";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/stats.js";
import { rmsNorm, rmsNormPlain } from "../src/engine/kernels/rmsnorm.js";
import { Rng } from "../src/engine/tensor/random.js";
import { sharedArray } from "../src/engine/tensor/weight.js";
import { abVerdict } from "../src/records/interval.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  rows: { type: "string", default: "16" },
  dim: { type: "string", default: "768" },
  blocks: { type: "string", default: "10" },
  calls: { type: "string", default: "5000" },
});
const [rows, dim] = [Number(args.rows), Number(args.dim)];
const rng = new Rng(7);
const x = sharedArray(Float32Array, rows * dim);
x.set(rng.fillNormal(new Float32Array(rows * dim), 1));
const weight = sharedArray(Float32Array, dim);
weight.set(rng.fillNormal(new Float32Array(dim), 1));
const outs = { A: sharedArray(Float32Array, rows * dim), B: sharedArray(Float32Array, rows * dim) };
const norms = { A: rmsNormPlain, B: rmsNorm };

/** Calls a CPU-second. */
function rate(arm: "A" | "B", calls: number): number {
  const t0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) norms[arm](x, rows, dim, weight, 1e-6, outs[arm]);
  const used = process.cpuUsage(t0);
  return calls / ((used.user + used.system) / 1e6);
}

rate("A", 500);
rate("B", 500);
if (!outs.A.every((v, i) => Object.is(v, outs.B[i]))) throw new Error("the two arms gave different bits");
console.log(
  `rmsNorm of ${rows} rows of ${dim}: A plain loops, B vector.wat; load ${loadavg()[0]?.toFixed(2)}`,
);
const blocks: BlockTrials[] = [];
for (let b = 0; b < Number(args.blocks); b++) {
  const order = b % 2 === 0 ? (["A", "B", "B", "A"] as const) : (["B", "A", "A", "B"] as const);
  const speed: Record<"A" | "B", number[]> = { A: [], B: [] };
  for (const arm of order) speed[arm].push(rate(arm, Number(args.calls)));
  blocks.push({ a: speed.A, b: speed.B });
  const us = (xs: number[]) => (1e6 / (xs.reduce((s, v) => s + v, 0) / xs.length)).toFixed(2);
  console.log(`block ${b + 1} (${order.join("")}): us a call (CPU) ${us(speed.A)} -> ${us(speed.B)}`);
}
const { estimate, low, high, df } = blockedRatioInterval(blocks);
console.log(
  `B/A speed: ${estimate.toFixed(3)}x, 95% interval ${low.toFixed(3)}x to ${high.toFixed(3)}x (df ${df}): ${abVerdict([low, high])}; load ${loadavg()[0]?.toFixed(2)}`,
);
