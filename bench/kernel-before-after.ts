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
 *   at M = 1, 4 and 16 input rows, for bench-100m's MLP shapes [2304, 768] and [768, 2304] (which
 *   the caches hold), a [131072, 768] matrix (400 MB, past the caches, as a model's weights are
 *   at decode) and at M = 1 and 16 a [32768, 2304] one (288 MiB, past them at the down projection's K),
 *   all in row quads (tensor/row-quads.ts) as the loader lays f32 matrices out; then row-major,
 *   as the MXFP4 and FP8 matmuls' decoded chunks are, [2304, 768] at M = 16 and one chunk
 *   [64, 2880] at M = 1 (read back from L2); GFLOP/s per core. An arm whose module exports
 *   `quads` reads row quads with it, its input put in pairs by `pairs` once a run (as the matmul
 *   does once a call); otherwise, and for row-major rows, `tile` is called with the row and k
 *   strides of the layout (an older tile without them ignores them, and reads row quads wrong).
 * - mxfp4-decode (matmul/mxfp4-decode.wat, or mxfp4-rows.wat's decode at older revisions): MXFP4 weights [2880, 2880] (gpt-oss's expert
 *   shape) decoded 64 rows at a time into scratch, alone and with the working tree's tile after it
 *   at one input row (the fused MXFP4 matmul's decode step); G weights/s per core. Both arms get
 *   the working tree's mxfp4Tables, which start with the half scales an older decode reads.
 * - mxfp4-halves: the working tree's MXFP4 decode (with --before, the decode that revision has,
 *   as mxfp4-decode finds it) on codes in OCP order (before) against the working tree's `.halves`
 *   build (scripts/build-kernels.mjs) on the same weights re-laid out in halves order
 *   (formats/mxfp4-halves.ts, `bringup weights convert --layout halves`) (after), as mxfp4-decode's
 *   cases. "same bits" says the two decode the same values.
 * - mxfp4-m1: the fused MXFP4 matmul's step at one input row, as mxfp4-decode's second case has
 *   it (the decode at --before, then the working tree's tile) (before) against the working tree's
 *   matmul/mxfp4-rows.wat, which decodes straight into the multiply-adds (after), on the same
 *   weights; then the same with the after arm's `.halves` build on the codes in halves order (as
 *   mxfp4-halves: the before arm decodes the OCP codes); then on 16 of 64 random experts as
 *   mxfp4-int8's last case, then the after arm's in halves order (as the loader lays them).
 *   "same bits" compares the outputs.
 * - fp8-decode (matmul/fp8-rows.wat): FP8 E4M3 weights [2880, 2880] with a scale per 128x128 tile
 *   (the FP8 checkpoints' layout, quantized from normal values by floatToFp8Tile128), decoded and
 *   run as mxfp4-decode's; then the fused step at one input row as mxfp4-m1's, the after arm's
 *   fp8 (decoding into the multiply-adds) against the before arm's decode then the tile; then
 *   both arms' fp8 without the NaN code test (no code here is NaN's), a before arm that predates
 *   the `.nan-free` build as it was; then that again with the after arm's `.lanes` build on a copy
 *   of the codes in lanes order (formats/fp8-lanes.ts); then the after arm's `.quads` build on the
 *   codes in quads order (formats/fp8-quads.ts, as the loader lays them) against the before arm's
 *   `.lanes` build in lanes order, on these weights; then both arms' `.quads` decode (alone, and
 *   then the tile) on the codes in quads order; then the quads fp8, and both arms' quads decode, on
 *   the MoE bench's FP8 experts (16 of 64 [2048, 1024] at random, 1x32 scales); G weights/s per core.
 * - mxfp4-int8 (matmul/mxfp4-int8.wat): the integer MXFP4 rows over the same MXFP4 weights as
 *   mxfp4-decode's, at M = 1 and 4 input rows quantized by mxfp4-int8.ts (each arm's own, as its
 *   revision has it: the layout may change with the kernel), the exponents laid out by block
 *   (int8-exponents.ts) for an arm that reads them so, row-major with the half scales' table for
 *   an older one, 64 rows a call as the matmul calls it; G weights/s (times M) per core. Then at M = 1 over 16 of 64 experts
 *   [2048, 1024] picked at random, as MoE decode steps read them (64 MiB, past L3). Each case also
 *   with the after arm on the codes in halves order and its input's halves form (the before arm
 *   as before: OCP codes), "same bits" then saying the orders give the same outputs.
 *
 * --chunk sets the rows a decode writes before the tile reads them back (64, the matmul's, by
 * default: 64 rows of K = 2880 are 720 KiB, beyond L1, within L2), --after-chunk the after arm's
 * (default --chunk; with --before HEAD the two arms then differ in their chunks alone); --k the
 * decode cases' K.
 *
 *   npx tsx bench/kernel-before-after.ts --kernel tile|mxfp4-decode|mxfp4-halves|mxfp4-m1|fp8-decode|mxfp4-int8 [--before HEAD] [--blocks 4]
 *     [--trial-ms 150] [--chunk 64] [--after-chunk C] [--k 2880]
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { lanesText } from "../scripts/fp8-lanes.mjs";
import { NAN_TEST, nanFreeText } from "../scripts/fp8-nan-free.mjs";
import { quadsText } from "../scripts/fp8-quads.mjs";
import { type BlockTrials, blockedRatioInterval } from "../src/bench/index.js";
import { compileWasm, instantiateWasm, type WasmModule } from "../src/common/wasm-runtime.js";
import { int8ExponentStride } from "../src/engine/kernels/matmul/int8-exponents.js";
import { quantizedFormBytes } from "../src/engine/kernels/matmul/mxfp4-int8.js";
import { QUADS_ACC_BYTES } from "../src/engine/kernels/matmul/tile-module.js";
import { type KernelBinary, kernelBytes } from "../src/engine/kernels/wasm-kernels.js";
import { toRowQuads } from "../src/engine/tensor/row-quads.js";
import { floatToFp8Tile128 } from "../src/formats/fp8-blockwise.js";
import { toLanesInPlace } from "../src/formats/fp8-lanes.js";
import { toQuadsInPlace } from "../src/formats/fp8-quads.js";
import { toHalves } from "../src/formats/mxfp4-halves.js";
import { benchArgs } from "./args.js";
import { fp8Experts } from "./fp8-experts.js";
import { int8Quantizers, type Quantizer } from "./int8-quantizers.js";
import {
  type Arm,
  allocate,
  instantiate,
  int8Exponents,
  memory,
  mxfp4Weights,
  randomExperts,
  rng,
} from "./kernel-arena.js";
import { type Case, KernelCases } from "./kernel-cases.js";
import { importAtRevision } from "./revision-module.js";

const args = benchArgs(import.meta.url, {
  kernel: { type: "string", default: "tile" },
  before: { type: "string" },
  blocks: { type: "string", default: "4" },
  "trial-ms": { type: "string", default: "150" },
  chunk: { type: "string", default: "64" },
  "after-chunk": { type: "string" },
  k: { type: "string", default: "2880" },
});
/** Each kernel's file, then where an older revision kept the same export. */
const KERNELS = {
  tile: ["matmul/matmul-tile"],
  "mxfp4-decode": ["matmul/mxfp4-decode", "matmul/mxfp4-rows"],
  "mxfp4-halves": ["matmul/mxfp4-decode", "matmul/mxfp4-rows"],
  "mxfp4-m1": ["matmul/mxfp4-decode", "matmul/mxfp4-rows"],
  "fp8-decode": ["matmul/fp8-rows"],
  "mxfp4-int8": ["matmul/mxfp4-int8"],
} as const;
const kernel = args.kernel as keyof typeof KERNELS;
if (!(kernel in KERNELS)) throw new Error(`--kernel must be one of ${Object.keys(KERNELS).join(", ")}`);
const blocks = Number(args.blocks);
const trialMs = Number(args["trial-ms"]);

const root = join(import.meta.dirname, "..");
const watPath = (name: string) => `src/engine/kernels/${name}.wat`;
const path = watPath(KERNELS[kernel][0]);
/** The kernel's text at the --before revision, from the first of its files that revision has. */
function beforeText(): { text: string; name: string } {
  for (const name of KERNELS[kernel]) {
    const at = `${args.before ?? "HEAD"}:${watPath(name)}`;
    try {
      return {
        text: execFileSync("git", ["show", at], { cwd: root, encoding: "utf8", stdio: "pipe" }),
        name: at,
      };
    } catch {
      // Not at that revision: try where it was kept before.
    }
  }
  throw new Error(`${args.before ?? "HEAD"} has none of ${KERNELS[kernel].map(watPath).join(", ")}`);
}
const halves = kernel === "mxfp4-halves";
const m1 = kernel === "mxfp4-m1";
// mxfp4-halves' before arm is the working tree's decode unless --before names a revision.
const old =
  halves && args.before === undefined
    ? { text: readFileSync(join(root, path), "utf8"), name: path }
    : beforeText();
const before = instantiate(old.text, old.name);
const built = (name: KernelBinary) =>
  instantiateWasm(compileWasm(kernelBytes(name)) as WasmModule, memory) as Arm;
const after = halves
  ? built("matmul/mxfp4-decode.halves")
  : m1
    ? built("matmul/mxfp4-rows")
    : instantiate(readFileSync(join(root, path), "utf8"), path);
const tile = instantiate(readFileSync(join(root, watPath(KERNELS.tile[0])), "utf8"), "tile").tile as (
  ...a: number[]
) => void;

/** Weight rows a matmul takes at a time (matmul-kernel.ts's chunk; a decode's rows), per arm. */
const CHUNK = Number(args.chunk);
const AFTER_CHUNK = Number(args["after-chunk"] ?? args.chunk);
/** The decode cases' K (their N is 2880, gpt-oss's expert shape, as is K by default). */
const decodeK = Number(args.k);
for (const c of [CHUNK, AFTER_CHUNK])
  if (!(2880 % c === 0 && c % 4 === 0)) throw new Error("--chunk must be a multiple of 4 dividing 2880");
if (!(decodeK > 0 && decodeK % 32 === 0)) throw new Error("--k must be a positive multiple of 32");
const cases = new KernelCases(after, CHUNK, AFTER_CHUNK, tile);
const chunkOf = (arm: Arm) => cases.chunkOf(arm);
if (kernel === "tile") {
  for (const [N, K, Ms, quads] of [
    [2304, 768, [1, 4, 16], true],
    [768, 2304, [1, 4, 16], true],
    [131072, 768, [1, 4, 16], true],
    [32768, 2304, [1, 16], true],
    [2304, 768, [16], false],
    // One chunk of decoded rows, as the MXFP4 and FP8 matmuls' tile reads it back from L2.
    [CHUNK, 2880, [1], false],
  ] as const) {
    const w = allocate(N * K * 4);
    const weights = rng.fillNormal(new Float32Array(memory.buffer, w, N * K), 0.05);
    if (quads) toRowQuads(weights, N, K);
    for (const M of Ms) {
      const x = allocate(M * K * 4);
      rng.fillNormal(new Float32Array(memory.buffer, x, M * K), 1);
      const pairs = allocate(M * K * 4);
      const o = allocate(M * N * 4);
      const acc = allocate(QUADS_ACC_BYTES);
      cases.push({
        label: `tile M=${M}, [${N}, ${K}], ${quads ? "row quads" : "row-major"}`,
        unit: "GFLOP/s",
        work: 2 * M * K * N,
        outAt: () => o,
        outBytes: M * N * 4,
        run: (arm) => {
          const chunk = chunkOf(arm);
          const G = (c0: number) => Math.min(chunk, N - c0) / 4;
          if (quads && arm.quads !== undefined) {
            const at = M > 1 ? pairs : x;
            if (M > 1) arm.pairs?.(K, M, x, pairs);
            // Each call reads the next chunk's weights ahead, as the pool's one thread would, and
            // keeps its k-blocked sums at acc (a tile without those arguments ignores them).
            for (let c0 = 0; c0 < N; c0 += chunk) {
              const ahead = c0 + chunk < N ? w + (c0 + chunk) * K * 4 : -1;
              arm.quads(K, M, at, w + c0 * K * 4, o + c0 * 4, G(c0), N * 4, ahead, acc);
            }
            return;
          }
          const [rowStride, kStride] = quads ? [16, 64] : [K * 4, 16];
          for (let c0 = 0; c0 < N; c0 += chunk)
            arm.tile?.(K, M, x, w + c0 * K * 4, o + c0 * 4, G(c0), N * 4, rowStride, kStride);
        },
      });
    }
  }
} else if (kernel === "fp8-decode") {
  const [N, K, B] = [2880, decodeK, 128];
  const scaleRow = Math.ceil(K / B);
  // Normal values quantized as FP8 checkpoints are (so few codes are E4M3 subnormals, which f32
  // multiplies handle slowly).
  const fp8 = floatToFp8Tile128(rng.fillNormal(new Float32Array(N * K), 0.02), N, K);
  const codes = allocate(N * K);
  new Uint8Array(memory.buffer, codes, N * K).set(fp8.elements);
  const scales = allocate(fp8.scaleInv.byteLength);
  new Float32Array(memory.buffer, scales, fp8.scaleInv.length).set(fp8.scaleInv);
  const scalesAt = (c0: number) => scales + Math.floor(c0 / B) * scaleRow * 4;
  // The scales times 2^120, as an fp8 whose text multiplies by 2^120 nowhere takes them (the
  // engine's copy: fp8-folded-scales.ts).
  const folded = allocate(fp8.scaleInv.byteLength);
  new Float32Array(memory.buffer, folded, fp8.scaleInv.length).set(fp8.scaleInv.map((s) => s * 2 ** 120));
  const takesFolded = (text: string) => !text.slice(text.indexOf('(func (export "fp8")')).includes("0x1p120");
  const afterText = readFileSync(join(root, path), "utf8");
  const foldedShift = new Map<Arm, number>([
    [after, takesFolded(afterText) ? folded - scales : 0],
    [before, takesFolded(old.text) ? folded - scales : 0],
  ]);
  /** The scales of the chunk from row c0 as `arm`'s fp8 takes them. */
  const fp8ScalesAt = (arm: Arm, c0: number) => scalesAt(c0) + (foldedShift.get(arm) as number);
  cases.decode(N, K, (arm, c0, rows, chunk) =>
    arm.decode?.(K, codes + c0 * K, scalesAt(c0), scaleRow * 4, B / 32, B, c0 % B, rows, chunk),
  );
  /**
   * `kernels`' fp8 over rows c0.. of a chunk at one input row, the scales as `arm`'s takes them,
   * the codes at `at` (file order, or a copy in lanes order).
   */
  const fp8Rows = (
    kernels: Arm,
    arm: Arm,
    x: number,
    c0: number,
    acc: number,
    o: number,
    chunk: number,
    at = codes,
  ) =>
    kernels.fp8?.(
      K,
      1,
      x,
      at + c0 * K,
      fp8ScalesAt(arm, c0),
      scaleRow * 4,
      B / 32,
      B,
      c0 % B,
      acc,
      o,
      chunk,
      N * 4,
    );
  cases.fusedStep(
    "the fused step at M=1, the after arm decoding into the multiply-adds",
    N,
    K,
    (arm, c0, rows, chunk) =>
      arm.decode?.(K, codes + c0 * K, scalesAt(c0), scaleRow * 4, B / 32, B, c0 % B, rows, chunk),
    (x, c0, acc, o, chunk) => fp8Rows(after, after, x, c0, acc, o, chunk),
  );
  // Both arms decoding into the multiply-adds in their `.nan-free` form (these codes have no NaN's;
  // the engine runs that form on such weights), a before arm that predates it as it was; then the
  // after arm's `.lanes` build of it on a copy of the codes in lanes order (as the loader lays them).
  const nanFree = instantiate(nanFreeText(path, afterText), `${path}.nan-free`);
  const beforeNanFree = old.text.includes(NAN_TEST)
    ? instantiate(nanFreeText(old.name, old.text), old.name)
    : before;
  const lanesNanFree = instantiate(nanFreeText(path, lanesText(path, afterText)), `${path}.nan-free.lanes`);
  const lanesCodes = allocate(N * K);
  const lanesView = new Uint8Array(memory.buffer, lanesCodes, N * K);
  lanesView.set(fp8.elements);
  toLanesInPlace(lanesView);
  for (const lanes of [false, true])
    cases.rowStep(
      `the FP8 rows at M=1, both decoding into the multiply-adds, .nan-free${lanes ? ", the after arm's codes in lanes order" : ""}`,
      N,
      K,
      (arm, x, c0, acc, o, chunk) =>
        arm === after
          ? fp8Rows(lanes ? lanesNanFree : nanFree, arm, x, c0, acc, o, chunk, lanes ? lanesCodes : codes)
          : fp8Rows(beforeNanFree, arm, x, c0, acc, o, chunk),
    );
  // The after arm's `.quads` build on the codes in quads order against the before arm's `.lanes`
  // build on them in lanes order (as the loader laid them before quads), both `.nan-free`.
  const lanesBefore = instantiate(
    nanFreeText(old.name, lanesText(old.name, old.text)),
    `${old.name}.nan-free.lanes`,
  );
  const quadsNanFree = instantiate(
    nanFreeText(path, quadsText(path, lanesText(path, afterText))),
    `${path}.nan-free.quads`,
  );
  const quadsCodes = allocate(N * K);
  const quadsView = new Uint8Array(memory.buffer, quadsCodes, N * K);
  quadsView.set(fp8.elements);
  toQuadsInPlace(quadsView, K);
  cases.rowStep(
    "the FP8 rows at M=1, .nan-free, the after arm's codes in quads order, the before arm's in lanes order",
    N,
    K,
    (arm, x, c0, acc, o, chunk) =>
      arm === after
        ? fp8Rows(quadsNanFree, arm, x, c0, acc, o, chunk, quadsCodes)
        : fp8Rows(lanesBefore, arm, x, c0, acc, o, chunk, lanesCodes),
  );
  // Both arms' `.quads` decode on the codes in quads order (the decode into scratch from
  // KernelSwitches.mxfp4ScratchTokens input rows).
  const { quadsText: quadsThen } = await importAtRevision<{ quadsText: typeof quadsText }>(
    root,
    args.before ?? "HEAD",
    ["scripts/fp8-quads.mjs", "scripts/wat-rewrites.mjs"],
  );
  const quadsBefore = instantiate(quadsThen(old.name, lanesText(old.name, old.text)), `${old.name}.quads`);
  cases.decode(
    N,
    K,
    (arm, c0, rows, chunk) =>
      (arm === after ? quadsNanFree : quadsBefore).decode?.(
        K,
        quadsCodes + c0 * K,
        scalesAt(c0),
        scaleRow * 4,
        B / 32,
        B,
        c0 % B,
        rows,
        chunk,
      ),
    ", both arms' .quads builds on the codes in quads order",
  );
  fp8ExpertsCase(lanesBefore, quadsNanFree, takesFolded(old.text), quadsBefore);
} else if (kernel === "mxfp4-int8") {
  const [N, K] = [2880, decodeK];
  const { tables, codes, scales } = mxfp4Weights(N, K);
  const exps = int8Exponents(scales, N, K);
  const quantizers = await int8Quantizers(root, args.before ?? "HEAD");
  // Each case again with the after arm on the codes in halves order (as the loader lays them) and
  // the input's halves form, which its quantizer writes past the OCP one.
  const codesShift = halvesCopy(codes, (N * K) / 2)(after) - codes;
  const inHalves = (halvesAfter: boolean) => (halvesAfter ? ", the after arm's codes in halves order" : "");
  /** The kernel's input arguments for `arm`, the after arm's shifted to the halves form if asked. */
  const inputFor = (q: number[], arm: Arm, halvesAfter: boolean, M: number, K: number) =>
    arm === after && halvesAfter ? [(q[0] as number) + quantizedFormBytes(M, K)] : q;
  for (const M of [1, 4]) {
    const input = quantizedInputs(rng.fillNormal(new Float32Array(M * K), 1), M, K, quantizers);
    const o = allocate(M * N * 4);
    for (const halvesAfter of [false, true])
      cases.push({
        label: `integer MXFP4 rows, M=${M}, [${N}, ${K}]${inHalves(halvesAfter)}`,
        unit: "G weights/s",
        work: M * N * K,
        outAt: () => o,
        outBytes: M * N * 4,
        run: (arm) => {
          const chunk = chunkOf(arm);
          const q = inputFor(input(arm), arm, halvesAfter, M, K);
          const at = codes + (arm === after && halvesAfter ? codesShift : 0);
          for (let c0 = 0; c0 < N; c0 += chunk)
            arm.mxfp4_int8?.(
              K,
              M,
              ...q,
              at + (c0 * K) / 2,
              ...(int8ByBlock(arm) ? [exps + c0, int8ExponentStride(N)] : [scales + (c0 * K) / 32, tables]),
              o + c0 * 4,
              Math.min(chunk, N - c0),
              N * 4,
            );
        },
      });
  }
  const experts = randomExperts();
  const expertsShift = halvesCopy(experts.codes, experts.codesBytes)(after) - experts.codes;
  const input = quantizedInputs(rng.fillNormal(new Float32Array(1024), 1), 1, 1024, quantizers);
  for (const halvesAfter of [false, true])
    cases.push({
      label: `integer MXFP4 rows, M=1, ${experts.label}${inHalves(halvesAfter)}`,
      unit: "G weights/s",
      work: experts.work,
      outAt: () => experts.o,
      outBytes: experts.outBytes,
      run: (arm) => {
        const q = inputFor(input(arm), arm, halvesAfter, 1, 1024);
        const shift = arm === after && halvesAfter ? expertsShift : 0;
        experts.each(chunkOf(arm), (codes, scales, at, n, exps) =>
          arm.mxfp4_int8?.(
            1024,
            1,
            ...q,
            codes + shift,
            ...(int8ByBlock(arm) ? [exps, int8ExponentStride(experts.rows)] : [scales, experts.tables]),
            at,
            n,
            experts.rows * 4,
          ),
        );
      },
    });
} else if (m1) {
  const [N, K] = [2880, decodeK];
  const { tables, codes, scales } = mxfp4Weights(N, K);
  const inHalves = halvesCopy(codes, (N * K) / 2)(after);
  const afterHalves = built("matmul/mxfp4-rows.halves");
  for (const halvesAfter of [false, true]) {
    const [kernel, at] = halvesAfter ? [afterHalves, inHalves] : [after, codes];
    cases.fusedStep(
      `the fused step at M=1, [${N}, ${K}]${halvesAfter ? ", the after arm's codes in halves order" : ""}`,
      N,
      K,
      (arm, c0, rows, chunk) =>
        arm.decode?.(codes + (c0 * K) / 2, scales + (c0 * K) / 32, tables, rows, (chunk * K) / 32),
      (x, c0, acc, o, chunk) =>
        kernel.mxfp4?.(K, 1, x, at + (c0 * K) / 2, scales + (c0 * K) / 32, tables, acc, o, chunk, N * 4),
    );
  }
  const [rows, acc] = [allocate(CHUNK * 1024 * 4), allocate(128)];
  // The MoE bench's experts, as mxfp4-int8's last case reads them.
  const experts = randomExperts();
  const xe = allocate(1024 * 4);
  rng.fillNormal(new Float32Array(memory.buffer, xe, 1024), 1);
  // The experts' codes in halves order for the after arm's `.halves` build, as the loader lays them.
  const halvesShift = halvesCopy(experts.codes, experts.codesBytes)(after) - experts.codes;
  for (const halvesAfter of [false, true]) {
    const [kernel, shift] = halvesAfter ? [afterHalves, halvesShift] : [after, 0];
    cases.push({
      label: `the fused step at M=1, ${experts.label}${halvesAfter ? ", the after arm's codes in halves order" : ""}`,
      unit: "G weights/s",
      work: experts.work,
      outAt: () => experts.o,
      outBytes: experts.outBytes,
      run: (arm) =>
        experts.each(chunkOf(arm), (c, s, at, n) => {
          if (arm === after)
            kernel.mxfp4?.(1024, 1, xe, c + shift, s, experts.tables, acc, at, n, experts.ldo);
          else {
            arm.decode?.(c, s, experts.tables, rows, n * 32);
            tile(1024, 1, xe, rows, at, n / 4, experts.ldo, 1024 * 4, 16);
          }
        }),
    });
  }
} else {
  const [N, K] = [2880, decodeK];
  const { tables, codes, scales } = mxfp4Weights(N, K);
  // mxfp4-halves: the after arm reads the same weights re-laid out.
  const codesOf = halves ? halvesCopy(codes, (N * K) / 2) : () => codes;
  cases.decode(N, K, (arm, c0, rows, chunk) =>
    arm.decode?.(codesOf(arm) + (c0 * K) / 2, scales + (c0 * K) / 32, tables, rows, (chunk * K) / 32),
  );
}

/**
 * Whether the before arm's mxfp4_int8 reads exponents laid out by block (int8-exponents.ts) and
 * their stride, rather than row-major exponents and the half scales' table as an older one did.
 * Decided once: searching the kernel's text on every call charged the before arm for it.
 */
const beforeInt8ByBlock = !old.text.includes("(param $halfScales");
/** Whether an arm's mxfp4_int8 reads exponents laid out by block (the after arm's always does). */
function int8ByBlock(arm: Arm): boolean {
  return arm === after || beforeInt8ByBlock;
}

/**
 * x [M, K] quantized by each arm's quantizer into the memory: per arm, the kernel's arguments after
 * M, the input's offset (and, where the quantizer returned one, its scales' offset, which an older
 * kernel took next).
 */
function quantizedInputs(
  x: Float32Array,
  M: number,
  K: number,
  quantizers: { before: Quantizer; after: Quantizer },
): (arm: Arm) => number[] {
  const at = ({ quantizeInput, quantizedBytes }: Quantizer): number[] => {
    const q = allocate(quantizedBytes(M, K));
    const scales = quantizeInput(x, M, K, memory.buffer, q);
    return typeof scales === "number" ? [q, scales] : [q];
  };
  const forBefore = at(quantizers.before);
  const forAfter = at(quantizers.after);
  return (arm) => (arm === before ? forBefore : forAfter);
}

/** The after arm's codes: a copy of `bytes` codes at `codes` in halves order; the before arm's as they are. */
function halvesCopy(codes: number, bytes: number): (arm: Arm) => number {
  const copy = allocate(bytes);
  const view = new Uint8Array(memory.buffer);
  view.set(toHalves(view.subarray(codes, codes + bytes)), copy);
  return (arm) => (arm === after ? copy : codes);
}

/**
 * The FP8 rows at one input row over the MoE bench's FP8 experts (fp8-experts.ts): `before`'s on
 * the codes in lanes order against `after`'s on them in quads order, both taking the folded scales
 * (fp8-folded-scales.ts), `before` unless it predates them; then both arms' `.quads` decode of
 * them into scratch (`quadsBefore`, `quadsAfter`), a chunk at a time.
 */
function fp8ExpertsCase(before: Arm, quadsAfter: Arm, beforeFolded: boolean, quadsBefore: Arm): void {
  const fp8 = fp8Experts();
  const { experts } = fp8;
  cases.push({
    label: `the FP8 rows at M=1, .nan-free, ${experts.label}, 1x32 scales, the after arm's codes in quads order, the before arm's in lanes order`,
    unit: "G weights/s",
    work: experts.work,
    outAt: () => experts.o,
    outBytes: experts.outBytes,
    run: (arm) =>
      arm === after
        ? fp8.rows(quadsAfter, fp8.quads, fp8.folded, chunkOf(arm))
        : fp8.rows(before, fp8.lanes, beforeFolded ? fp8.folded : fp8.scales, chunkOf(arm)),
  });
  const out = allocate(Math.max(CHUNK, AFTER_CHUNK) * 1024 * 4);
  cases.push({
    label: `decode alone, ${experts.label}, 1x32 scales, both arms' .quads builds on the codes in quads order`,
    unit: "G weights/s",
    work: experts.work,
    // The last chunk's rows both arms decode.
    outAt: () => out,
    outBytes: 4 * 1024 * 4,
    run: (arm) => fp8.decodeQuads(arm === after ? quadsAfter : quadsBefore, out, chunkOf(arm)),
  });
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
const bits = (c: Case, arm: Arm) => Buffer.from(new Uint8Array(memory.buffer, c.outAt(arm), c.outBytes));
console.log(
  `${old.name} (before, ${CHUNK} rows at a time) against ${halves ? "the working tree's .halves build on the codes in halves order" : m1 ? "the working tree's matmul/mxfp4-rows.wat" : `the working tree's ${path}`} (after, ${AFTER_CHUNK} rows), ${blocks} blocks of 4 trials, rates per CPU-second on one thread`,
);
for (const c of cases.list) {
  c.run(before);
  const beforeBits = Buffer.from(bits(c, before));
  c.run(after);
  const same = beforeBits.equals(bits(c, after));
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
