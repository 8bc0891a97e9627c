/**
 * What Int8Experts (src/engine/kernels/matmul/int8-experts.ts) saves one gpt-oss MoE layer at one
 * token on the integer MXFP4 path at one thread, against the pool's calls it replaces (its `run`
 * made to decline, so the layer's forward takes them), both in this process on the same layer: the
 * MoE bench's expert shape (32 experts [2048, 1024] and [1024, 1024], top 8, in MXFP4 laid out by
 * the loader), its buffers planned in the shared memory as a replayed decode step's are (one plan
 * an arm: their steps ask for different buffers), each input in the shared memory too. A trial is
 * --reps forwards over 64 fixed inputs, its rate taken over the process's CPU time (a trial that
 * loses the core to other load is not counted slower for it); trials in balanced blocks (ABBA, then
 * BAAB), the ratio with its 95% interval (blockedRatioInterval). Unlike moe-expert-paths.ts
 * --baseline (two engines in one process, each with a speed of its own for the process's life,
 * seen at 1.16x to 1.38x either way), the two arms here are one engine's one layer.
 *
 *   npx tsx bench/moe-layer-int8.ts [--reps 40] [--blocks 20]
 */
import { loadavg } from "node:os";
import { blockedRatioInterval } from "../src/bench/index.js";
import { ClampedSwigluMoe } from "../src/engine/blocks/mlp/clamped-swiglu-moe.js";
import { Int8Experts } from "../src/engine/kernels/matmul/int8-experts.js";
import { MatmulPool } from "../src/engine/kernels/pool.js";
import { wasmArena } from "../src/engine/kernels/wasm-arena.js";
import type { HostTensor } from "../src/engine/loader/host-tensor.js";
import { WeightSource } from "../src/engine/loader/weight-source.js";
import type { ForwardContext } from "../src/engine/model/model.js";
import { StepScratch } from "../src/engine/model/step-scratch.js";
import { Rng } from "../src/engine/tensor/random.js";
import { encodeMxfp4 } from "../src/formats/index.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  reps: { type: "string", default: "40" },
  blocks: { type: "string", default: "20" },
});
const [reps, blockCount] = [Number(args.reps), Number(args.blocks)];

const [E, H, I, topK] = [32, 1024, 1024, 8];
const rng = new Rng(5);
const normal = (n: number, std: number) => rng.fillNormal(new Float32Array(n), std);
const gateUp = encodeMxfp4(normal(E * 2 * I * H, 0.5));
const down = encodeMxfp4(normal(E * H * I, 0.5));
const tensors = new Map<string, HostTensor>([
  ["m.router.weight", { dtype: "F32", shape: [E, H], data: normal(E * H, 0.3) }],
  ["m.router.bias", { dtype: "F32", shape: [E], data: normal(E, 0.3) }],
  ["m.experts.gate_up_proj_bias", { dtype: "F32", shape: [E, 2 * I], data: normal(E * 2 * I, 0.5) }],
  ["m.experts.down_proj_bias", { dtype: "F32", shape: [E, H], data: normal(E * H, 0.5) }],
  ["m.experts.gate_up_proj_blocks", { dtype: "U8", shape: [E, 2 * I, H / 32, 16], data: gateUp.blocks }],
  ["m.experts.gate_up_proj_scales", { dtype: "U8", shape: [E, 2 * I, H / 32], data: gateUp.scales }],
  ["m.experts.down_proj_blocks", { dtype: "U8", shape: [E, H, I / 32, 16], data: down.blocks }],
  ["m.experts.down_proj_scales", { dtype: "U8", shape: [E, H, I / 32], data: down.scales }],
]);
const spec = { numExperts: E, topK, intermediateSize: I, limit: 7, alpha: 1.702 };
const source = new WeightSource((n) => tensors.get(n), [...tensors.keys()], "moe-layer-int8");
const moe = ClampedSwigluMoe.load(source, "m", spec, H);
const pool = new MatmulPool(1, { mxfp4: "int8" });
const arena = wasmArena();
if (pool.mxfp4 !== "int8" || arena === null) throw new Error("the integer MXFP4 path needs WebAssembly SIMD");
const scratches = [0, 1].map(() => new StepScratch(pool.planMemory(32 << 20)));
const inputs = Array.from({ length: 64 }, () => {
  const x = arena.array(Float32Array, H) as Float32Array;
  x.set(normal(H, 1));
  return x;
});
const together = Int8Experts.prototype.run;

/** CPU milliseconds a forward, with Int8Experts (true) or the pool's calls. */
function trial(withInt8Experts: boolean): number {
  Int8Experts.prototype.run = withInt8Experts ? together : () => null;
  const scratch = scratches[withInt8Experts ? 1 : 0] as StepScratch;
  const ctx = { pool, scratch } as unknown as ForwardContext;
  const c0 = process.cpuUsage();
  for (let i = 0; i < reps; i++) {
    scratch.begin();
    moe.forward(inputs[i % inputs.length] as Float32Array, ctx);
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / reps;
}

for (let w = 0; w < 3; w++) [trial(false), trial(true)];
const load0 = loadavg()[0] as number;
const blocks = Array.from({ length: blockCount }, (_, i) => {
  const first = i % 2 === 0;
  const [t1, t2, t3, t4] = [trial(!first), trial(first), trial(first), trial(!first)];
  const [pool4, int8] = first
    ? [
        [t1, t4],
        [t2, t3],
      ]
    : [
        [t2, t3],
        [t1, t4],
      ];
  process.stdout.write(
    `block ${i + 1}: pool calls ${pool4.map((t) => t.toFixed(3))}, Int8Experts ${int8.map((t) => t.toFixed(3))} CPU ms\n`,
  );
  return { a: pool4.map((t) => 1 / t), b: int8.map((t) => 1 / t) };
});
const median = (xs: number[]) => xs.sort((p, q) => p - q)[xs.length >> 1] as number;
const ms = (arm: "a" | "b") => median(blocks.flatMap((b) => b[arm].map((r) => 1 / r))).toFixed(3);
const r = blockedRatioInterval(blocks);
process.stdout.write(
  `one MoE layer at one token, CPU ms a forward (medians): pool calls ${ms("a")}, Int8Experts ${ms("b")}\n` +
    `Int8Experts / pool calls ${r.estimate.toFixed(3)}x [${r.low.toFixed(3)}, ${r.high.toFixed(3)}] (speed, 95%); ` +
    `load average (1 min) ${load0.toFixed(2)} before the blocks, ${(loadavg()[0] as number).toFixed(2)} after\n`,
);
await pool.close();
