/**
 * A gated MLP's first half on the pool, two ways in one process: the gate/up matmul then swiglu as
 * two dispatches (matmulMany, then swiglu: A) against matmulSwiglu, whose units apply swiglu to
 * the rows they just computed (B: one dispatch, no swiglu staging). Weights are bench-100m's
 * ([2304, 768] f32 in row quads, as the loader lays them out), --layers of them so they come from
 * memory as a decode step's do, at --inputs input rows (16: a 16-stream decode step; 1: batch 1,
 * where matmulSwiglu runs the two dispatches itself). Trials are timed in balanced blocks (ABBA,
 * then BAAB, alternating); per block the B/A speed ratio is printed, then the ratio with its 95%
 * interval (blockedRatioInterval: trials compared within their block) and abVerdict's verdict.
 * Both arms must give the same bits (the run stops otherwise).
 *
 *   npx tsx bench/mlp-swiglu-dispatch.ts [--inputs 16] [--threads 2] [--layers 6] [--blocks 12]
 *     [--reps 30]
 */
import { availableParallelism, loadavg } from "node:os";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/stats.js";
import { MatmulPool } from "../src/engine/kernels/pool.js";
import { Rng } from "../src/engine/tensor/random.js";
import { layOutForTile } from "../src/engine/tensor/row-quads.js";
import { shareArray, type Weight } from "../src/engine/tensor/weight.js";
import { abVerdict } from "../src/records/interval.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  inputs: { type: "string", default: "16" },
  threads: { type: "string", default: String(Math.min(2, availableParallelism())) },
  layers: { type: "string", default: "6" },
  blocks: { type: "string", default: "12" },
  reps: { type: "string", default: "30" },
});
const M = Number(args.inputs);
const H = 768;
const I = 2304;
const rng = new Rng(3);

function weight(rows: number, cols: number): Weight {
  const data = shareArray(rng.fillNormal(new Float32Array(rows * cols), 0.05));
  if (!layOutForTile(data, rows, cols)) throw new Error("this runtime has no shared WebAssembly memory");
  return { dtype: "f32", rows, cols, data, layout: "row-quads" };
}

const layers = Array.from({ length: Number(args.layers) }, () => ({ gate: weight(I, H), up: weight(I, H) }));
const pool = new MatmulPool(Number(args.threads));
const x = rng.fillNormal(new Float32Array(M * H), 1);
const outs = { A: new Float32Array(M * I), B: new Float32Array(M * I) };
const up = new Float32Array(M * I);
const arms = {
  A: () => {
    for (const l of layers) {
      pool.matmulMany(x, M, [l.gate, l.up], [outs.A, up]);
      pool.swiglu(outs.A, up, M * I);
    }
  },
  B: () => {
    for (const l of layers) pool.matmulSwiglu(x, M, l.gate, l.up, outs.B, up);
  },
};
/** Mean milliseconds of one pass over the layers. */
function time(arm: "A" | "B", reps: number): number {
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) arms[arm]();
  return (performance.now() - t0) / reps;
}

time("A", 5);
time("B", 5);
if (!outs.A.every((v, i) => Object.is(v, outs.B[i]))) throw new Error("the two arms gave different bits");
console.log(
  `gate/up [${I}, ${H}] + swiglu, ${args.layers} layers, ${M} input rows, ${pool.threads} threads; A two dispatches, B matmulSwiglu; load ${loadavg()[0]?.toFixed(2)}`,
);
const blocks: BlockTrials[] = [];
const reps = Number(args.reps);
for (let b = 0; b < Number(args.blocks); b++) {
  const order = b % 2 === 0 ? (["A", "B", "B", "A"] as const) : (["B", "A", "A", "B"] as const);
  const speed: Record<"A" | "B", number[]> = { A: [], B: [] };
  for (const arm of order) speed[arm].push(1000 / time(arm, reps));
  blocks.push({ a: speed.A, b: speed.B });
  const mean = (xs: number[]) => xs.reduce((s, v) => s + v, 0) / xs.length;
  console.log(
    `block ${b + 1} (${order.join("")}): passes/s ${mean(speed.A).toFixed(1)} -> ${mean(speed.B).toFixed(1)}`,
  );
}
await pool.close();
const { estimate, low, high, df } = blockedRatioInterval(blocks);
console.log(
  `B/A speed: ${estimate.toFixed(3)}x, 95% interval ${low.toFixed(3)}x to ${high.toFixed(3)}x (df ${df}): ${abVerdict([low, high])}; load ${loadavg()[0]?.toFixed(2)}`,
);
