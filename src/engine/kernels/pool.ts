import { availableParallelism } from "node:os";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import { BringupError } from "../../common/errors.js";
import type { PlanMemory } from "../model/step-scratch.js";
import type { Weight } from "../tensor/weight.js";
import { arenaPlanMemory } from "./arena-plan-memory.js";
import { dispatch } from "./dispatch.js";
import {
  type IndexerScoresJob,
  indexerScoresJob,
  indexerSizes,
  stageIndexerScores,
} from "./indexer-scores/indexer-job.js";
import { indexerScores } from "./indexer-scores/indexer-scores.js";
import {
  applyState,
  controlSlots,
  type KernelThread,
  kernelThread,
  type StateMessage,
} from "./kernel-thread.js";
import { Int8Inputs } from "./matmul/int8-inputs.js";
import type { MatmulJob, MatmulSegment } from "./matmul/matmul-job.js";
import { int8Reads, matmulRange, type WeightParts, weightParts } from "./matmul/matmul-kernel.js";
import { matmulShapes } from "./matmul/matmul-shapes.js";
import { rowUnits } from "./matmul/row-units.js";
import { TILE_CHUNK, tileRegionBytes } from "./matmul/tile-module.js";
import {
  type AttentionParams,
  attendRange,
  attentionBounds,
  attentionCosts,
} from "./paged-attention/attention-job.js";
import type { AttentionRows } from "./paged-attention/attention-kernel.js";
import { attentionSimdBytes } from "./paged-attention/attention-kernel.js";
import { poolModules } from "./pool-modules.js";
import type { KernelName, KernelParams } from "./registry.js";
import { clampedSwiglu } from "./swiglu/clamped-swiglu.js";
import type { ClampedArithmetic } from "./swiglu/clamped-swiglu-f32.js";
import { swiglu } from "./swiglu/swiglu.js";
import { type KernelSwitches, kernelSwitches } from "./switches.js";
import type { WasmArena } from "./wasm-arena.js";
import type { WorkerInit } from "./worker.js";
import { workerEntry } from "./worker-entry.js";

/** Below this many multiply-adds a matmul stays on the calling thread: waking workers costs more. */
const PARALLEL_MIN_MACS = 1 << 16;
/** Values of a clamped SwiGLU staged at a time (a multiple of 4). */
const CLAMPED_SLICE = 16384;
/** Below this many values swiglu stays on the calling thread. */
const SWIGLU_PARALLEL_MIN = 1 << 14;
/**
 * From this many input rows matmulSwiglu runs swiglu inside the matmul's units; at one row the
 * separate dispatches measured a little faster (pool-level A/B, bench-100m's MLP).
 */
const SWIGLU_FUSED_MIN_INPUTS = 2;
/** Queries of one sequence that attention takes together, each key/value row read once for all. */
const ATTENTION_TILE = 32;

/** One layer's attention over a step: what pool.attention needs (see attendTokens). */
export type AttentionJob = Omit<AttentionParams, "simd" | "tile"> & AttentionRows;

/**
 * Runs the engine's kernels on the calling thread plus `threads - 1` worker threads (worker.ts)
 * that share weights and activations through SharedArrayBuffers. A dispatch names a kernel of the
 * registry (registry.ts) and its parameters; its units are claimed from a shared counter by every
 * thread, each computed the same way whoever claims it, so results do not depend on the split.
 * The calling thread blocks (Atomics.wait) until its helpers finish: a step is synchronous.
 */
export class MatmulPool {
  readonly threads: number;
  /** Whether the kernels run their WebAssembly SIMD forms (false: the plain JavaScript kernels). */
  readonly simd: boolean;
  /** Whether the matmul tile multiplies and adds in one fused step (relaxed SIMD). */
  readonly fma: boolean;
  /** How MXFP4 weights are multiplied: in the fused kernel, on int8 dot products, or unpacked to f32 rows first (also without SIMD). */
  readonly mxfp4: KernelSwitches["mxfp4"];
  /** How FP8 weights with tile scales are multiplied at one input row (exact, or scaled: the switch). */
  readonly fp8: KernelSwitches["fp8"];
  private readonly ctrl = controlSlots();
  private readonly workers: { worker: Worker; port: MessagePort }[] = [];
  private readonly arena: WasmArena | null;
  /** The calling thread's own kernel state, changed by the same messages as the workers'. */
  private readonly thread: KernelThread;
  private readonly parts = new WeakMap<Weight, WeightParts>();
  private readonly weightIds = new WeakMap<Weight, number>();
  private readonly kvIds = new WeakMap<Float32Array, number>();
  private nextId = 0;
  /** Byte offsets of the staged input and output in the shared WebAssembly memory (-1: outside it). */
  private xOffset = -1;
  private outOffset = -1;
  /** Where the integer MXFP4 path's quantized inputs are written (null: the pool has no such path). */
  private readonly int8Inputs: Int8Inputs | null;
  private closed = false;

  /**
   * `simd` defaults to true where WebAssembly SIMD validates, and `fma` (fused multiply-add in the
   * matmul tile, about 1.7x its throughput on batches) where relaxed SIMD does, unless the
   * switches (switches.ts, read from the environment) turn them off.
   */
  constructor(threads: number = availableParallelism(), options: Partial<KernelSwitches> = {}) {
    if (!Number.isInteger(threads) || threads < 1) {
      throw new BringupError("ENGINE_THREADS", `threads must be a positive integer, got ${threads}.`);
    }
    this.threads = threads;
    const { arena, modules, fma, mxfp4, fp8 } = poolModules({ ...kernelSwitches(), ...options });
    this.simd = arena !== null;
    this.fma = fma;
    this.arena = arena;
    this.mxfp4 = mxfp4;
    this.fp8 = fp8;
    const memory = this.arena?.memory;
    this.thread = kernelThread(modules, memory);
    const int8 = this.thread.mxfp4Int8;
    this.int8Inputs = int8 && this.arena ? new Int8Inputs(this.arena, int8.quantize) : null;
    for (let i = 1; i < threads; i++) {
      const { port1, port2 } = new MessageChannel();
      const workerData: WorkerInit = { ctrl: this.ctrl, port: port2, modules, memory };
      const entry = workerEntry();
      const worker = new Worker(entry.filename, { eval: entry.eval, workerData, transferList: [port2] });
      worker.unref();
      this.workers.push({ worker, port: port1 });
    }
  }

  /** Arrays for a planned step's buffers in the shared memory (arenaPlanMemory). */
  planMemory(bytes: number): PlanMemory {
    return arenaPlanMemory(this.arena, bytes);
  }

  /** out[M, w.rows] = x[M, w.cols] · wᵀ, dequantizing narrow weights row by row. */
  matmul(x: Float32Array, M: number, w: Weight, out: Float32Array): void {
    this.matmulMany(x, M, [w], [out]);
  }

  /**
   * Several matmuls over the same input (q/k/v, gate/up) in one dispatch: their output rows are
   * treated as one long range and split between threads, so the helpers are woken once.
   */
  matmulMany(x: Float32Array, M: number, weights: readonly Weight[], outs: readonly Float32Array[]): void {
    const { K, totalRows } = this.checkMatmul(x, M, weights, outs);
    if (this.workers.length === 0 || M * K * totalRows < PARALLEL_MIN_MACS || this.closed) {
      this.matmulHere(x, M, K, weights, outs);
      return;
    }
    const params = this.stageMatmul(x, M, K, weights, outs, totalRows, totalRows);
    this.run("matmul", params, params.units.count, this.pairsWriter(params));
    this.copyOuts(params, outs);
  }

  /**
   * gateOut = silu(x · gateᵀ) · (x · upᵀ), a gated MLP's first half; upOut is left holding x · upᵀ
   * or anything (scratch). Where the threads share memory and SIMD, one dispatch whose units each
   * take some rows of both weights and apply swiglu.wat to them (matmul-swiglu-job.ts); otherwise
   * matmulMany then swiglu. The same bits either way.
   */
  matmulSwiglu(
    x: Float32Array,
    M: number,
    gate: Weight,
    up: Weight,
    gateOut: Float32Array,
    upOut: Float32Array,
  ): void {
    const I = gate.rows;
    const fused =
      this.thread.swiglu !== null &&
      this.workers.length > 0 &&
      !this.closed &&
      M >= SWIGLU_FUSED_MIN_INPUTS &&
      up.rows === I &&
      I % 4 === 0 &&
      M * gate.cols * 2 * I >= PARALLEL_MIN_MACS;
    if (!fused) {
      this.matmulMany(x, M, [gate, up], [gateOut, upOut]);
      this.swiglu(gateOut, upOut, M * I);
      return;
    }
    const { K, totalRows } = this.checkMatmul(x, M, [gate, up], [gateOut, upOut]);
    const fusedParams = this.stageMatmul(x, M, K, [gate, up], [gateOut, upOut], totalRows, I);
    if (fusedParams.segments.every((seg) => seg.outOffset >= 0)) {
      this.run("matmulSwiglu", { ...fusedParams, I }, fusedParams.units.count, this.pairsWriter(fusedParams));
      this.copyOuts(fusedParams, [gateOut]);
      return;
    }
    const params = { ...fusedParams, units: rowUnits(totalRows, TILE_CHUNK, this.threads) };
    this.run("matmul", params, params.units.count, this.pairsWriter(params));
    this.copyOuts(params, [gateOut, upOut]);
    this.swiglu(gateOut, upOut, M * I);
  }

  /** Checks a dispatch's shapes; its K and its weights' rows in all, and the tile's region made to fit. */
  private checkMatmul(
    x: Float32Array,
    M: number,
    weights: readonly Weight[],
    outs: readonly Float32Array[],
  ): { K: number; totalRows: number } {
    const { K, totalRows } = matmulShapes(x, M, weights, outs);
    this.ensureRegion("tile", tileRegionBytes(M, K), `a ${M}x${K} input`);
    return { K, totalRows };
  }

  /** The matmuls on this thread alone. */
  private matmulHere(
    x: Float32Array,
    M: number,
    K: number,
    weights: readonly Weight[],
    outs: readonly Float32Array[],
  ): void {
    // The integer MXFP4 path's input, quantized once for every weight.
    const int8 = weights.some((w) => int8Reads(this.partsOf(w)));
    const quantized = int8 ? this.quantize(x, M, K) : -1;
    weights.forEach((w, i) => {
      const N = w.rows;
      const out = outs[i] as Float32Array;
      // An input or output that lies in the shared memory (a replayed step's) is used in place.
      const xOffset = this.arena?.offsetOf(x) ?? -1;
      const outOffset = this.arena?.offsetOf(out) ?? -1;
      const range = { x, xOffset, M, K, out, outOffset, N, n0: 0, n1: N, quantized };
      matmulRange({ ...range, weight: this.partsOf(w) }, this.thread);
    });
  }

  /**
   * A parallel dispatch's input and outputs in the shared memory, its weights registered. An input
   * or output that already lies there (a replayed step's buffer, StepScratch) is used where it lies,
   * when every thread takes the tile's path (the plain kernel reads the staged copies); otherwise the
   * input is copied into the staged input and the outputs laid out one after another in the staged
   * output (output i at M * rowOffset_i, an [M, rows_i] matrix), for copyOuts to copy back. The
   * input's int8 form is written once here, its pairs once by pairsWriter's function. Its
   * units cut `unitRows` rows (rowUnits): all the weights' rows, or the rows each of them has
   * when a unit takes the same rows of every weight (matmulSwiglu).
   */
  private stageMatmul(
    x: Float32Array,
    M: number,
    K: number,
    weights: readonly Weight[],
    outs: readonly Float32Array[],
    totalRows: number,
    unitRows: number,
  ): MatmulJob {
    const ids = weights.map((w) => this.register(w));
    const tile = this.thread.tile;
    const inPlace = (a: Float32Array) =>
      tile !== null && K % 4 === 0 ? (this.arena?.offsetOf(a) ?? -1) : -1;
    // Row-quads weights' tile reads the input in pairs (tile-module.ts): staged once here, after
    // the row-major input the other kernels read, rather than by every thread for every unit.
    const pairs = tile !== null && M > 1 && weights.some((w) => this.partsOf(w).quads);
    let input = x;
    let xOffset = inPlace(x);
    let xPairs = -1;
    if (xOffset < 0) {
      input = this.stage("x", (pairs ? 2 : 1) * M * K);
      input.set(x.subarray(0, M * K));
      xOffset = this.xOffset;
      if (pairs && xOffset >= 0) xPairs = xOffset + M * K * 4;
    } else if (pairs) {
      this.stage("x", M * K);
      xPairs = this.xOffset;
    }
    // The integer MXFP4 path's input, quantized once for every weight and thread of the dispatch.
    const int8 = weights.some((w) => int8Reads(this.partsOf(w)));
    const quantized = int8 ? this.quantize(input, M, K) : -1;
    this.stage("out", M * totalRows);
    const segments: MatmulSegment[] = [];
    let rowOffset = 0;
    weights.forEach((w, i) => {
      const own = inPlace(outs[i] as Float32Array);
      const staged = this.outOffset < 0 ? -1 : this.outOffset + M * rowOffset * 4;
      segments.push({ id: ids[i] as number, N: w.rows, rowOffset, outOffset: own >= 0 ? own : staged });
      rowOffset += w.rows;
    });
    const units = rowUnits(unitRows, TILE_CHUNK, this.threads);
    return { M, K, xOffset, xPairs, totalRows, units, segments, quantized };
  }

  /**
   * What writes a dispatch's input pairs where its row-quads weights read them, if it has any: run
   * calls it after waking the helpers, so their wake-up overlaps it.
   */
  private pairsWriter(job: MatmulJob): (() => void) | undefined {
    const tile = this.thread.tile;
    return tile === null || job.xPairs < 0
      ? undefined
      : () => tile.pairs(job.K, job.M, job.xOffset, job.xPairs);
  }

  /** The first outs.length outputs of a dispatch from the staged output into `outs`, but those written in place. */
  private copyOuts(job: MatmulJob, outs: readonly Float32Array[]): void {
    const stagedOut = this.thread.out;
    outs.forEach((out, i) => {
      const { rowOffset, N, outOffset } = job.segments[i] as MatmulSegment;
      if (outOffset >= 0 && outOffset === this.arena?.offsetOf(out)) return;
      out.set(stagedOut.subarray(job.M * rowOffset, job.M * (rowOffset + N)));
    });
  }

  /**
   * gate = silu(gate) · up over n values. With SIMD: swiglu/swiglu.wat (several times faster than
   * Math.exp) over copies staged in the shared memory, split between the threads in ranges of
   * whole vectors (each value is computed alone, so the split changes no bits); otherwise
   * swiglu.ts's on the calling thread.
   */
  swiglu(gate: Float32Array, up: Float32Array, n: number): void {
    const simd = this.thread.swiglu;
    const padded = (n + 3) & ~3;
    const staged = simd === null ? null : this.stage("x", 2 * padded);
    if (simd === null || staged === null || this.xOffset < 0) {
      swiglu(gate, up, n);
      return;
    }
    staged.set(gate.subarray(0, n));
    staged.set(up.subarray(0, n), padded);
    const g = this.xOffset;
    const u = g + padded * 4;
    const vectors = padded >> 2;
    const helpers = this.workers.length;
    if (helpers === 0 || this.closed || n < SWIGLU_PARALLEL_MIN) simd.swiglu(g, u, vectors);
    else {
      const units = Math.min(vectors, 4 * (helpers + 1));
      this.run("swiglu", { g, u, vectors, units }, units);
    }
    gate.set(staged.subarray(0, n));
  }

  /**
   * gpt-oss's clamped SwiGLU of gateUp [n, 2I] into out [n, I] (clampedSwiglu's bits, in
   * `arithmetic`). With SIMD: swiglu/swiglu.wat's clamped_swiglu (or _f32) on the calling
   * thread (at one token an expert's I values are too few to wake the helpers), on the arrays
   * where they lie in the shared memory (a replayed step's), else through the staged input,
   * CLAMPED_SLICE values at a time (so a long prefill does not grow the staged region, which is
   * never given back, past what one needs).
   */
  clampedSwiglu(
    gateUp: Float32Array,
    n: number,
    I: number,
    limit: number,
    alpha: number,
    out: Float32Array,
    arithmetic: ClampedArithmetic = "f64",
  ): void {
    const f32 = arithmetic === "f32";
    const simd = this.thread.swiglu;
    const kernel = f32 ? simd?.clamped_swiglu_f32 : simd?.clamped_swiglu;
    const count = n * I;
    const gu = this.arena?.offsetOf(gateUp) ?? -1;
    const at = this.arena?.offsetOf(out) ?? -1;
    const direct = gu >= 0 && at >= 0;
    const slice = Math.min(count, CLAMPED_SLICE);
    const staged = kernel === undefined || direct ? null : this.stage("x", 3 * slice);
    if (kernel === undefined || count % 4 !== 0 || !(limit > 0) || (staged !== null && this.xOffset < 0)) {
      clampedSwiglu(gateUp, n, I, limit, alpha, out, arithmetic);
      return;
    }
    if (staged === null) {
      kernel(gu, at, count, limit, alpha);
      return;
    }
    for (let v0 = 0; v0 < count; v0 += slice) {
      const v1 = Math.min(count, v0 + slice);
      staged.set(gateUp.subarray(2 * v0, 2 * v1));
      kernel(this.xOffset, this.xOffset + 8 * slice, v1 - v0, limit, alpha);
      out.set(staged.subarray(2 * slice, 2 * slice + (v1 - v0)), v0);
    }
  }

  /**
   * The DSA indexer's scores of queries over one sequence's cached keys (see indexerScores). With
   * SIMD: indexer-scores/indexer-scores.wat over the keys gathered once into the staged input, each
   * query's positions split between the threads in ranges (each position's score is computed
   * alone, so the split changes no bits); otherwise indexer-scores.ts's on the calling thread.
   */
  indexerScores(job: IndexerScoresJob): void {
    const sizes = indexerSizes(job);
    const staged = this.thread.indexer === null ? null : this.stage("x", sizes.input / 4);
    const stagedOut = staged === null ? null : this.stage("out", sizes.output / 4);
    if (staged === null || stagedOut === null || this.xOffset < 0 || this.outOffset < 0) {
      for (const { q, weights, count, scores } of job.queries)
        indexerScores(q, weights, job.d, job.keys, job.offsets, count, scores);
      return;
    }
    const params = stageIndexerScores(
      job,
      (this.arena as WasmArena).memory.buffer,
      this.xOffset,
      this.outOffset,
    );
    const units = params.units.length / 3;
    if (this.workers.length === 0 || this.closed || sizes.macs < PARALLEL_MIN_MACS) {
      for (let u = 0; u < units; u++) indexerScoresJob.run(this.thread, params, u, -1);
    } else this.run("indexer", params, units);
    const all = new Float64Array(stagedOut.buffer, this.outOffset, sizes.output / 8);
    let at = 0;
    for (const { count, scores } of job.queries) {
      scores.set(all.subarray(at, at + count));
      at += count;
    }
  }

  /**
   * Attention for every token of a step (see attendTokens), split between the threads by cost
   * (the number of positions each token reads), so long prefills use every core.
   */
  attention(job: AttentionJob): void {
    const { meta, numHeads, headDim, vHeadDim } = job;
    const T = meta.length / 3;
    const cost = attentionCosts(meta);
    const total = cost[T] as number;
    const helpers = this.workers.length;
    const simd = this.thread.attention !== null && headDim % 4 === 0 && vHeadDim % 8 === 0;
    if (simd) {
      let maxSpan = 0;
      for (let t = 0; t < T; t++) maxSpan = Math.max(maxSpan, (cost[t + 1] as number) - (cost[t] as number));
      const bytes = attentionSimdBytes(
        ATTENTION_TILE,
        numHeads,
        job.numKvHeads,
        headDim,
        vHeadDim,
        maxSpan + ATTENTION_TILE - 1,
      );
      this.ensureRegion("attention", bytes, `attention over ${bytes} bytes of scratch`);
    }
    const params: AttentionParams = {
      meta,
      tables: job.tables,
      blockSize: job.blockSize,
      ringBlocks: job.ringBlocks,
      numHeads,
      numKvHeads: job.numKvHeads,
      headDim,
      vHeadDim,
      scale: job.scale,
      sinks: job.sinks,
      simd,
      tile: ATTENTION_TILE,
    };
    // One token is one unit (units are token ranges): a dispatch would wake the helpers for nothing.
    const alone = T === 1 || total * numHeads * (headDim + vHeadDim) < PARALLEL_MIN_MACS;
    if (helpers === 0 || this.closed || alone) {
      attendRange(this.thread, params, job, 0, T);
      return;
    }
    const kvId = this.registerKv(job.keys, job.values);
    const qLen = T * numHeads * headDim;
    const outLen = T * numHeads * vHeadDim;
    // Queries and outputs that lie in the shared memory (a replayed step's) are used where they lie.
    const qOffset = this.arena?.offsetOf(job.q) ?? -1;
    const outOffset = this.arena?.offsetOf(job.out) ?? -1;
    if (qOffset < 0) this.stage("x", qLen).set(job.q.subarray(0, qLen));
    const stagedOut = outOffset < 0 ? this.stage("out", outLen) : null;
    const bounds = attentionBounds(cost, helpers + 1, ATTENTION_TILE);
    this.run("attention", { ...params, kvId, bounds, qOffset, outOffset }, bounds.length - 1);
    if (stagedOut !== null) job.out.set(stagedOut.subarray(0, outLen));
  }

  /** Runs `units` units of a registered kernel on every thread (dispatch.ts). */
  run<N extends KernelName>(
    kernel: N,
    params: KernelParams<N>,
    units: number,
    writeInputs?: () => void,
  ): void {
    const memoryBytes = this.arena?.memory.buffer.byteLength ?? 0;
    const pool = { ctrl: this.ctrl, helpers: this.workers, thread: this.thread, memoryBytes };
    dispatch(pool, kernel, params, units, writeInputs);
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers.splice(0);
    await Promise.all(
      workers.map(({ worker, port }) => {
        port.close();
        return worker.terminate();
      }),
    );
  }

  /** Applies a state change to the calling thread and sends it to every helper. */
  private broadcast(message: StateMessage): void {
    applyState(this.thread, message);
    for (const { port } of this.workers) port.postMessage(message);
  }

  /**
   * Gives every thread a region of at least `need` bytes of the shared memory for the matmul tile's
   * or the attention loops' scratch; `what` names the request in the error when memory runs out.
   */
  private ensureRegion(kernel: "tile" | "attention", need: number, what: string): void {
    const region = kernel === "tile" ? this.thread.tile : this.thread.attention;
    const arena = this.arena;
    if (region === null || arena === null || region.bytes >= need) return;
    // Grow geometrically: regions are never freed, so few and large beats many and exact.
    const bytes = Math.max(need, 2 * region.bytes);
    const bases = Array.from({ length: this.workers.length + 1 }, () => arena.allocate(bytes));
    if (bases.some((b) => b < 0)) {
      throw new BringupError(
        "ENGINE_WASM_MEMORY_FULL",
        `no room left in the 4 GiB shared kernel memory for ${what}; lower --max-num-batched-tokens or --max-model-len, or run with BRINGUP_ENGINE_SIMD=0.`,
      );
    }
    applyState(this.thread, { type: "scratch", kernel, base: bases[0] as number, bytes });
    this.workers.forEach(({ port }, t) => {
      port.postMessage({
        type: "scratch",
        kernel,
        base: bases[t + 1] as number,
        bytes,
      } satisfies StateMessage);
    });
  }

  /**
   * x [M, K] quantized for the integer MXFP4 path into the pool's region of the shared memory
   * (Int8Inputs): its byte offset there, or -1 where the pool has no such path (or K is not a
   * multiple of 32). An input outside the shared memory is staged first.
   */
  private quantize(x: Float32Array, M: number, K: number): number {
    const arena = this.arena;
    if (this.int8Inputs === null || arena === null || K % 32 !== 0) return -1;
    let xOffset = arena.offsetOf(x);
    if (xOffset < 0) {
      this.stage("x", M * K).set(x.subarray(0, M * K));
      xOffset = this.xOffset;
    }
    return this.int8Inputs.write(xOffset, M, K);
  }

  private partsOf(w: Weight): WeightParts {
    const known = this.parts.get(w);
    if (known !== undefined) return known;
    // On the integer MXFP4 path an MXFP4 weight's exponents are laid out for it here, once.
    const parts = weightParts(w, this.arena, this.int8Inputs !== null);
    this.parts.set(w, parts);
    return parts;
  }

  private register(w: Weight): number {
    const known = this.weightIds.get(w);
    if (known !== undefined) return known;
    for (const part of [w.data, w.scale?.data, w.mxScales]) {
      if (part !== undefined && !(part.buffer instanceof SharedArrayBuffer)) {
        throw new BringupError(
          "ENGINE_WEIGHT_NOT_SHARED",
          "weights must live in SharedArrayBuffers to be read by matmul workers; build them with shareArray().",
        );
      }
    }
    const id = this.nextId++;
    this.weightIds.set(w, id);
    this.broadcast({ type: "weight", id, parts: this.partsOf(w) });
    return id;
  }

  private registerKv(keys: Float32Array, values: Float32Array): number {
    const known = this.kvIds.get(keys);
    if (known !== undefined) return known;
    if (!(keys.buffer instanceof SharedArrayBuffer && values.buffer instanceof SharedArrayBuffer)) {
      throw new BringupError(
        "ENGINE_KV_NOT_SHARED",
        "KV caches must live in SharedArrayBuffers to be read by worker threads.",
      );
    }
    const id = this.nextId++;
    this.kvIds.set(keys, id);
    this.broadcast({ type: "kv", id, keys, values });
    return id;
  }

  /**
   * The staged input or output of a dispatch, at least `length` floats, shared with the workers.
   * With SIMD it lies in the shared WebAssembly memory, so the kernels read the input and write
   * the output where they lie instead of copying them through their scratch.
   */
  private stage(which: "x" | "out", length: number): Float32Array {
    const current = this.thread[which];
    if (current.length >= length && current.buffer instanceof SharedArrayBuffer) return current;
    const grownLength = Math.max(length, current.length * 2);
    const offset = this.arena === null ? -1 : this.arena.allocate(grownLength * 4);
    const grown =
      offset < 0
        ? new Float32Array(new SharedArrayBuffer(grownLength * 4))
        : new Float32Array((this.arena as WasmArena).memory.buffer, offset, grownLength);
    if (which === "x") this.xOffset = offset;
    else this.outOffset = offset;
    this.broadcast({ type: "stage", which, buffer: grown });
    return grown;
  }
}
