/**
 * The fp8=scaled switch at the pool (the engine's own path: fp8Step's bands, scaleInput and the
 * `.scaled` builds' fp8) against fp8=exact, at one input row on an FP8 weight [N, K] with a scale
 * per 128x128 tile (absmax/448, as real checkpoints have them; codes in quads order as the loader
 * lays them), each pool on --threads threads. Three arms, interleaved in blocks (ABC then CBA):
 * exact and scaled on an input ~N(0, 1), and scaled on that input times 2^-73, where its products
 * (x·w·2^-56 in the kernel) fall below 2^-126, subnormal, while the exact path's stay normal: the
 * range's cost. Prints each arm's median (G weights/s), the load before and after, the largest
 * |scaled - exact| over the largest |exact|, and ratios with 95% intervals (blocks as blocks).
 *
 *   npx tsx bench/fp8-scaled.ts [--n 2880] [--k 2880] [--blocks 8] [--trial-ms 150] [--threads 1]
 */
import { loadavg } from "node:os";
import { median } from "simple-statistics";
import { blockedRatioInterval } from "../src/bench/index.js";
import { MatmulPool } from "../src/engine/kernels/pool.js";
import { Rng } from "../src/engine/tensor/random.js";
import { shareArray, type Weight } from "../src/engine/tensor/weight.js";
import { floatToFp8Tile128 } from "../src/formats/fp8-blockwise.js";
import { toQuadsInPlace } from "../src/formats/fp8-quads.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  n: { type: "string", default: "2880" },
  k: { type: "string", default: "2880" },
  blocks: { type: "string", default: "8" },
  "trial-ms": { type: "string", default: "150" },
  threads: { type: "string", default: "1" },
});
const [N, K, blocks, trialMs, threads] = (["n", "k", "blocks", "trial-ms", "threads"] as const).map(
  (name) => {
    const v = Number(args[name]);
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`--${name} must be a positive integer, got ${args[name]}`);
    return v;
  },
) as [number, number, number, number, number];
if (N % 4 !== 0 || K % 32 !== 0) throw new Error("--n must be a multiple of 4 and --k of 32");

const rng = new Rng(28);
const tiles = floatToFp8Tile128(rng.fillNormal(new Float32Array(N * K), 0.02), N, K);
const w: Weight = {
  dtype: "fp8_e4m3",
  rows: N,
  cols: K,
  data: shareArray(toQuadsInPlace(tiles.elements.slice(), K)),
  scale: { data: shareArray(tiles.scaleInv), blockRows: 128, blockCols: 128 },
  fp8Order: "quads",
};
const exactPool = new MatmulPool(threads, { simd: true, fp8: "exact" });
const scaledPool = new MatmulPool(threads, { simd: true, fp8: "scaled" });
if (scaledPool.fp8 !== "scaled") throw new Error(`the pool runs fp8=${scaledPool.fp8}, not scaled`);
const x = rng.fillNormal(new Float32Array(K), 1);
const tiny = x.map((v) => v * 2 ** -73);

const arms = [
  { name: "fp8=exact, x ~ N(0, 1)", pool: exactPool, x },
  { name: "fp8=scaled, x ~ N(0, 1)", pool: scaledPool, x },
  { name: "fp8=scaled, x · 2^-73 (subnormal products)", pool: scaledPool, x: tiny },
] as const;
const out = new Float32Array(N);

/** G weights/s of `arm` over one trial of --trial-ms. */
function trial(arm: (typeof arms)[number]): number {
  const t0 = performance.now();
  let calls = 0;
  while (performance.now() - t0 < trialMs) {
    arm.pool.matmul(arm.x, 1, w, out);
    calls++;
  }
  return (calls * N * K) / ((performance.now() - t0) / 1000) / 1e9;
}

const [exactOut, scaledOut] = [new Float32Array(N), new Float32Array(N)];
exactPool.matmul(x, 1, w, exactOut);
scaledPool.matmul(x, 1, w, scaledOut);
const largest = exactOut.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
const worst = exactOut.reduce((m, v, i) => Math.max(m, Math.abs(v - (scaledOut[i] as number))), 0);
process.stdout.write(
  `FP8 [${N}, ${K}], 128x128 tiles (absmax/448), quads order, one input row, ${threads} thread(s); ` +
    `max |scaled - exact| ${(worst / largest).toExponential(2)} of max |exact|\n`,
);

const loadBefore = loadavg()[0] as number;
for (const arm of arms) trial(arm); // warm-up
const rates = arms.map(() => [] as number[][]);
for (let b = 0; b < blocks; b++) {
  const order = b % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
  const block = arms.map(() => [] as number[]);
  for (const i of order) block[i]?.push(trial(arms[i] as (typeof arms)[number]));
  for (const [i, r] of block.entries()) rates[i]?.push(r);
}
process.stdout.write(
  `load average (1 min) ${loadBefore.toFixed(2)} before, ${(loadavg()[0] as number).toFixed(2)} after\n`,
);
for (const [i, arm] of arms.entries())
  process.stdout.write(
    `${arm.name.padEnd(44)} ${median((rates[i] as number[][]).flat()).toFixed(2)} G weights/s\n`,
  );
const ratio = (b: number, a: number, label: string) => {
  const interval = blockedRatioInterval(
    (rates[a] as number[][]).map((ra, k) => ({ a: ra, b: (rates[b] as number[][])[k] as number[] })),
  );
  process.stdout.write(
    `${label.padEnd(44)} ${interval.estimate.toFixed(2)}x [${interval.low.toFixed(2)}, ${interval.high.toFixed(2)}]\n`,
  );
};
process.stdout.write(`ratios (95% intervals, ${blocks} blocks):\n`);
ratio(1, 0, "scaled / exact");
ratio(2, 1, "scaled, subnormal products / normal");
await Promise.all([exactPool.close(), scaledPool.close()]);
