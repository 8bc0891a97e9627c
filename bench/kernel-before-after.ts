/**
 * What a change to a matmul kernel's WebAssembly text costs: the kernel as a git revision has it
 * (--before, default HEAD) against the working tree's, both compiled here (wabt, relaxed SIMD) into
 * one process over one shared memory and run on this thread alone, in balanced blocks (before,
 * after, after, before, then the reverse, alternating). Each trial's rate is taken over the
 * process's CPU time, not wall time: on a machine other processes load, a trial that loses the core
 * for a while is not counted slower for it (they still share its caches and memory bandwidth, so
 * quieter is still better). Per case: each block's trials, the medians, and after/before with its
 * 95% interval (blockedRatioInterval), and whether both arms wrote the same bits.
 *
 * Kernels and cases:
 * - tile (matmul/matmul-tile.wat): f32 weights [N, K] in chunks of 64 rows as the matmul runs them,
 *   at M = 1, 4 and 16 input rows, for bench-100m's MLP shapes [2304, 768] and [768, 2304]; GFLOP/s
 *   per core.
 * - mxfp4-decode (matmul/mxfp4-decode.wat, or mxfp4-rows.wat's decode at older revisions): MXFP4 weights [2880, 2880] (gpt-oss's expert
 *   shape) decoded 64 rows at a time into scratch, alone and with the working tree's tile after it
 *   at one input row (the fused MXFP4 matmul's decode step); G weights/s per core. Both arms get
 *   the working tree's mxfp4Tables, which start with the half scales an older decode reads.
 * - mxfp4-halves: the working tree's MXFP4 decode on codes in OCP order (before) against its
 *   `.halves` build (scripts/build-kernels.mjs) on the same weights re-laid out in halves order
 *   (formats/mxfp4-halves.ts, `bringup weights convert --layout halves`) (after), as mxfp4-decode's
 *   cases; --before is not read. "same bits" says the two decode the same values.
 * - fp8-decode (matmul/fp8-rows.wat): FP8 E4M3 weights [2880, 2880] with a scale per 128x128 tile
 *   (the FP8 checkpoints' layout, quantized from normal values by floatToFp8Tile128), decoded and
 *   run as mxfp4-decode's; G weights/s per core.
 *
 *   npx tsx bench/kernel-before-after.ts --kernel tile|mxfp4-decode|mxfp4-halves|fp8-decode [--before HEAD] [--blocks 4]
 *     [--trial-ms 150]
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import wabtInit from "wabt";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/index.js";
import { compileWasm, instantiateWasm, type WasmModule } from "../src/common/wasm-runtime.js";
import { MXFP4_TABLE_BYTES, mxfp4Tables } from "../src/engine/kernels/matmul/matmul-kernel.js";
import { kernelBytes } from "../src/engine/kernels/wasm-kernels.js";
import { Rng } from "../src/engine/tensor/random.js";
import { floatToFp8Tile128 } from "../src/formats/fp8-blockwise.js";
import { toHalves } from "../src/formats/mxfp4-halves.js";
import { benchArgs } from "./args.js";

const args = benchArgs(import.meta.url, {
  kernel: { type: "string", default: "tile" },
  before: { type: "string", default: "HEAD" },
  blocks: { type: "string", default: "4" },
  "trial-ms": { type: "string", default: "150" },
});
/** Each kernel's file, then where an older revision kept the same export. */
const KERNELS = {
  tile: ["matmul/matmul-tile"],
  "mxfp4-decode": ["matmul/mxfp4-decode", "matmul/mxfp4-rows"],
  "mxfp4-halves": ["matmul/mxfp4-decode"],
  "fp8-decode": ["matmul/fp8-rows"],
} as const;
const kernel = args.kernel as keyof typeof KERNELS;
if (!(kernel in KERNELS)) throw new Error(`--kernel must be one of ${Object.keys(KERNELS).join(", ")}`);
const blocks = Number(args.blocks);
const trialMs = Number(args["trial-ms"]);

const root = join(import.meta.dirname, "..");
const watPath = (name: string) => `src/engine/kernels/${name}.wat`;
setFlagsFromString("--experimental-wasm-relaxed-simd");
const wabt = await wabtInit();
const memory = new WebAssembly.Memory({ initial: 2048, maximum: 65536, shared: true });
type Arm = Record<string, (...a: number[]) => number>;
function instantiate(text: string, name: string): Arm {
  const features = { simd: true, threads: true, relaxed_simd: true };
  const parsed = wabt.parseWat(name, text, features);
  const { buffer } = parsed.toBinary({});
  parsed.destroy();
  const module = compileWasm(buffer);
  if (module === undefined) throw new Error("this runtime has no relaxed WebAssembly SIMD");
  return instantiateWasm(module, memory) as Arm;
}
const path = watPath(KERNELS[kernel][0]);
/** The kernel's text at the --before revision, from the first of its files that revision has. */
function beforeText(): { text: string; name: string } {
  for (const name of KERNELS[kernel]) {
    const at = `${args.before}:${watPath(name)}`;
    try {
      return {
        text: execFileSync("git", ["show", at], { cwd: root, encoding: "utf8", stdio: "pipe" }),
        name: at,
      };
    } catch {
      // Not at that revision: try where it was kept before.
    }
  }
  throw new Error(`${args.before} has none of ${KERNELS[kernel].map(watPath).join(", ")}`);
}
const halves = kernel === "mxfp4-halves";
const old = halves ? { text: readFileSync(join(root, path), "utf8"), name: path } : beforeText();
const before = instantiate(old.text, old.name);
const after = halves
  ? (instantiateWasm(compileWasm(kernelBytes("matmul/mxfp4-decode.halves")) as WasmModule, memory) as Arm)
  : instantiate(readFileSync(join(root, path), "utf8"), path);
const tile = instantiate(readFileSync(join(root, watPath(KERNELS.tile[0])), "utf8"), "tile").tile as (
  ...a: number[]
) => void;

/** Bump allocation in the shared memory, 64-byte aligned, growing it as needed. */
let top = 0;
function allocate(bytes: number): number {
  const at = top;
  top = Math.ceil((top + bytes) / 64) * 64;
  const missing = top - memory.buffer.byteLength;
  if (missing > 0) memory.grow(Math.ceil(missing / 65536));
  return at;
}
const rng = new Rng(5);

/** A case: one call of `run(arm)` does `work` units (flops or weights) and writes `out` bytes at `outAt`. */
interface Case {
  readonly label: string;
  readonly unit: string;
  readonly work: number;
  readonly outAt: number;
  readonly outBytes: number;
  run(arm: Arm): void;
}

const CHUNK = 64;
const cases: Case[] = [];
if (kernel === "tile") {
  for (const [N, K] of [
    [2304, 768],
    [768, 2304],
  ] as const) {
    const w = allocate(N * K * 4);
    rng.fillNormal(new Float32Array(memory.buffer, w, N * K), 0.05);
    for (const M of [1, 4, 16]) {
      const x = allocate(M * K * 4);
      rng.fillNormal(new Float32Array(memory.buffer, x, M * K), 1);
      const o = allocate(M * N * 4);
      cases.push({
        label: `tile M=${M}, [${N}, ${K}]`,
        unit: "GFLOP/s",
        work: 2 * M * K * N,
        outAt: o,
        outBytes: M * N * 4,
        run: (arm) => {
          for (let c0 = 0; c0 < N; c0 += CHUNK)
            arm.tile?.(K, M, x, w + c0 * K * 4, o + c0 * 4, CHUNK / 4, N * 4);
        },
      });
    }
  }
} else if (kernel === "fp8-decode") {
  const [N, K, B] = [2880, 2880, 128];
  const scaleRow = Math.ceil(K / B);
  // Normal values quantized as FP8 checkpoints are (so few codes are E4M3 subnormals, which f32
  // multiplies handle slowly).
  const fp8 = floatToFp8Tile128(rng.fillNormal(new Float32Array(N * K), 0.02), N, K);
  const codes = allocate(N * K);
  new Uint8Array(memory.buffer, codes, N * K).set(fp8.elements);
  const scales = allocate(fp8.scaleInv.byteLength);
  new Float32Array(memory.buffer, scales, fp8.scaleInv.length).set(fp8.scaleInv);
  decodeCases(N, K, (arm, c0, rows) =>
    arm.decode?.(
      K,
      codes + c0 * K,
      scales + Math.floor(c0 / B) * scaleRow * 4,
      scaleRow * 4,
      B / 32,
      B,
      c0 % B,
      rows,
      CHUNK,
    ),
  );
} else {
  const [N, K] = [2880, 2880];
  const tables = allocate(MXFP4_TABLE_BYTES);
  new Uint8Array(memory.buffer, tables, MXFP4_TABLE_BYTES).set(mxfp4Tables());
  const codes = allocate((N * K) / 2);
  const scales = allocate((N * K) / 32);
  const random = Uint8Array.from({ length: (N * K) / 2 }, () => rng.nextU32() & 255);
  new Uint8Array(memory.buffer, codes, (N * K) / 2).set(random);
  // mxfp4-halves: the after arm reads the same weights re-laid out.
  const halvesCodes = halves ? allocate((N * K) / 2) : codes;
  if (halves) new Uint8Array(memory.buffer, halvesCodes, (N * K) / 2).set(toHalves(random));
  new Uint8Array(memory.buffer, scales, (N * K) / 32).set(
    Uint8Array.from({ length: (N * K) / 32 }, () => 118 + (rng.nextU32() % 8)),
  );
  decodeCases(N, K, (arm, c0, rows) =>
    arm.decode?.(
      (arm === after ? halvesCodes : codes) + (c0 * K) / 2,
      scales + (c0 * K) / 32,
      tables,
      rows,
      (CHUNK * K) / 32,
    ),
  );
}

/** A decode alone and with the tile after it at M=1: `decode` writes rows [c0, c0 + CHUNK) at `rows`. */
function decodeCases(N: number, K: number, decode: (arm: Arm, c0: number, rows: number) => void): void {
  const rows = allocate(CHUNK * K * 4);
  const x = allocate(K * 4);
  rng.fillNormal(new Float32Array(memory.buffer, x, K), 1);
  const o = allocate(N * 4);
  for (const withTile of [false, true]) {
    cases.push({
      label: withTile ? "decode, then the tile at M=1" : "decode alone",
      unit: "G weights/s",
      work: N * K,
      outAt: withTile ? o : rows,
      outBytes: withTile ? N * 4 : CHUNK * K * 4,
      run: (arm) => {
        for (let c0 = 0; c0 < N; c0 += CHUNK) {
          decode(arm, c0, rows);
          if (withTile) tile(K, 1, x, rows, o + c0 * 4, CHUNK / 4, N * 4);
        }
      },
    });
  }
}

/** Units of work per CPU-second of `run(arm)` repeated for at least trialMs of wall time. */
function trial(c: Case, arm: Arm): number {
  const cpu = process.cpuUsage();
  const start = performance.now();
  let runs = 0;
  do {
    c.run(arm);
    runs++;
  } while (performance.now() - start < trialMs);
  const used = process.cpuUsage(cpu);
  return (c.work * runs) / ((used.user + used.system) / 1e6) / 1e9;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const bits = (c: Case) => Buffer.from(new Uint8Array(memory.buffer, c.outAt, c.outBytes));
console.log(
  `${old.name} (before) against ${halves ? "its .halves build on the codes in halves order" : `the working tree's ${path}`} (after), ${blocks} blocks of 4 trials, rates per CPU-second on one thread`,
);
for (const c of cases) {
  c.run(before);
  const beforeBits = Buffer.from(bits(c));
  c.run(after);
  const same = beforeBits.equals(bits(c));
  const trials: BlockTrials[] = [];
  for (let block = 0; block < blocks; block++) {
    const order = block % 2 === 0 ? [before, after, after, before] : [after, before, before, after];
    const a: number[] = [];
    const b: number[] = [];
    for (const arm of order) (arm === before ? a : b).push(trial(c, arm));
    trials.push({ a, b });
  }
  const r = blockedRatioInterval(trials);
  const all = (side: "a" | "b") => median(trials.flatMap((t) => t[side]));
  console.log(
    `${c.label}: before ${all("a").toFixed(2)}, after ${all("b").toFixed(2)} ${c.unit}; after/before ${r.estimate.toFixed(2)}x [${r.low.toFixed(2)}, ${r.high.toFixed(2)}]; ${same ? "same bits" : "BITS DIFFER"}`,
  );
}
