import { availableParallelism } from "node:os";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { BringupError } from "../../common/errors.js";
import {
  type AttentionSimd,
  attendTokens,
  attendTokensSimd,
  attentionSimdBytes,
  SIMD_POSITION_BLOCK,
} from "../attention/attention-kernel.js";
import { DTYPE_CODE, type Weight } from "../tensor/weight.js";
import { compileAttentionSimd, instantiateAttentionSimd } from "./attention-simd-module.js";
import { buildDecodeTables, type DecodeTables, matmulRange } from "./matmul-kernel.js";
import { compileSimdTile, instantiateTile, type SimdTile, type WasmModule } from "./simd-module.js";
import { swiglu } from "./swiglu.js";
import { compileSwigluSimd, instantiateSwigluSimd, type SwigluSimd } from "./swiglu-simd-module.js";
import { type WasmArena, wasmArena } from "./wasm-arena.js";

/** Below this many multiply-adds a matmul stays on the calling thread: waking workers costs more. */
const PARALLEL_MIN_MACS = 1 << 16;
/** Weight rows the SIMD path handles at a time (matmul-kernel.ts); sizes the scratch regions. */
const SIMD_CHUNK = 64;
/** Below this many values swiglu stays on the calling thread. */
const SWIGLU_PARALLEL_MIN = 1 << 14;
/** Queries of one sequence that attention takes together, each key/value row read once for all. */
const ATTENTION_TILE = 32;

/** One layer's attention over a step: what pool.attention needs (see attendTokens). */
export interface AttentionJob {
  /** Per token: position, first visible position, offset of its block table in `tables`. */
  readonly meta: Int32Array;
  readonly tables: Int32Array;
  readonly blockSize: number;
  readonly ringBlocks: number;
  readonly q: Float32Array;
  readonly out: Float32Array;
  readonly keys: Float32Array;
  readonly values: Float32Array;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly vHeadDim: number;
  readonly scale: number;
  readonly sinks: Float32Array | null;
}

/** Control slots in the shared Int32Array. */
const SEQ = 0;
/** How long a matmul may wait for its helpers before the pool declares them dead. */
const WORKER_STALL_MS = 120_000;
const FAILED = 2;
/** Next unclaimed chunk of a job: matmul rows or attention tokens (grows forever: each job owns a range of values). */
const NEXT = 3;
/** Chunks finished (grows forever, like NEXT). */
const FINISHED = 4;
/** Rows of a matmul claimed at a time (whole groups of four, the SIMD tile's CHUNK). */
const ROW_CHUNK = 64;

/**
 * Runs matmuls on the calling thread plus `threads - 1` worker threads that share weights and
 * activations through SharedArrayBuffers. Output rows are split into contiguous ranges; every element
 * is computed by the same kernel in the same order, so the result does not depend on the split.
 * The calling thread blocks (Atomics.wait) until its helpers finish: a step is synchronous.
 */
export class MatmulPool {
  readonly threads: number;
  private readonly tables: DecodeTables = buildDecodeTables();
  private readonly ctrl = new Int32Array(new SharedArrayBuffer(32));
  private readonly workers: { worker: Worker; port: MessagePort }[] = [];
  private readonly weightIds = new WeakMap<Weight, number>();
  private readonly kvIds = new WeakMap<Float32Array, number>();
  private readonly attnScratch = {
    scores: new Float64Array(256),
    acc: new Float64Array(64),
    slots: new Int32Array(256),
  };
  private nextWeightId = 0;
  private xStage = new Float32Array(new SharedArrayBuffer(4));
  private outStage = new Float32Array(new SharedArrayBuffer(4));
  /** Byte offsets of the staged arrays in the shared WebAssembly memory (-1: outside it). */
  private xStageOffset = -1;
  private outStageOffset = -1;
  private scratch = new Float32Array(1);
  private closed = false;

  /** Whether matmuls use the WebAssembly SIMD tile (false: the plain JavaScript kernel). */
  readonly simd: boolean;
  /** Whether that tile multiplies and adds in one fused step (relaxed SIMD). */
  readonly fma: boolean;
  private readonly simdTile: SimdTile | null;
  private readonly arena: WasmArena | null;
  private readonly attnSimd: AttentionSimd | null;
  private readonly swigluSimd: SwigluSimd | null;

  /**
   * `simd` defaults to true where WebAssembly SIMD validates, unless BRINGUP_ENGINE_SIMD=0 forces
   * the plain kernel (the reference-exact one). `fma` (fused multiply-add in the SIMD tile, about
   * 1.7x its throughput on batches) defaults to true where relaxed SIMD is available, unless
   * BRINGUP_ENGINE_FMA=0 forces the unfused tile (a mul then an add, rounded twice).
   */
  constructor(
    threads: number = availableParallelism(),
    options: { readonly simd?: boolean; readonly fma?: boolean } = {},
  ) {
    if (!Number.isInteger(threads) || threads < 1) {
      throw new BringupError("ENGINE_THREADS", `threads must be a positive integer, got ${threads}.`);
    }
    this.threads = threads;
    const arena = wasmArena();
    const wantSimd = (options.simd ?? process.env.BRINGUP_ENGINE_SIMD !== "0") && arena !== null;
    const wantFma = wantSimd && (options.fma ?? process.env.BRINGUP_ENGINE_FMA !== "0");
    const fusedModule = wantFma ? compileSimdTile(true) : undefined;
    const module = fusedModule ?? (wantSimd ? compileSimdTile(false) : undefined);
    this.simd = module !== undefined;
    this.fma = fusedModule !== undefined;
    this.arena = module === undefined ? null : arena;
    this.simdTile = module === undefined || arena === null ? null : instantiateTile(module, arena.memory);
    const attnModule = module === undefined ? undefined : compileAttentionSimd();
    this.attnSimd =
      attnModule === undefined || arena === null ? null : instantiateAttentionSimd(attnModule, arena.memory);
    const swigluModule = module === undefined ? undefined : compileSwigluSimd();
    this.swigluSimd =
      swigluModule === undefined || arena === null ? null : instantiateSwigluSimd(swigluModule, arena.memory);
    for (let i = 1; i < threads; i++) {
      const { port1, port2 } = new MessageChannel();
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          ctrl: this.ctrl,
          port: port2,
          module,
          attnModule,
          swigluModule,
          memory: this.arena?.memory,
        },
        transferList: [port2],
      });
      worker.unref();
      this.workers.push({ worker, port: port1 });
    }
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
    const K = (weights[0] as Weight).cols;
    let totalRows = 0;
    weights.forEach((w, i) => {
      const out = outs[i] as Float32Array;
      if (w.cols !== K || x.length < M * K || out.length < M * w.rows) {
        throw new BringupError(
          "ENGINE_SHAPE",
          `matmul shapes disagree: x ${x.length} for ${M}x${K}, weight ${w.rows}x${w.cols}, out ${out.length}.`,
        );
      }
      totalRows += w.rows;
    });
    if (this.scratch.length < 4 * K) this.scratch = new Float32Array(4 * K);
    this.ensureSimdScratch(M, K);
    const helpers = this.workers.length;
    if (helpers === 0 || M * K * totalRows < PARALLEL_MIN_MACS || this.closed) {
      weights.forEach((w, i) => {
        this.runRange(x, -1, M, w, outs[i] as Float32Array, -1, 0, w.rows);
      });
      return;
    }
    const ids = weights.map((w) => this.register(w));
    const stagedX = this.stage("x", M * K);
    stagedX.set(x.subarray(0, M * K));
    const stagedOut = this.stage("out", M * totalRows);
    // Output i lives at stagedOut[M * rowOffset[i] ...] as an [M, rows_i] matrix.
    const rowOffset: number[] = [];
    let acc = 0;
    for (const w of weights) {
      rowOffset.push(acc);
      acc += w.rows;
    }
    // Threads claim chunks of rows from a shared counter until none are left, so a thread that
    // starts late or runs slow (a busy machine) leaves its share to the others instead of making
    // them wait. Each output row is computed the same way whoever claims it.
    const chunks = Math.ceil(totalRows / ROW_CHUNK);
    // Where each output's [M, rows_i] block starts in the shared memory (-1: staged elsewhere).
    const outOffsets = rowOffset.map((o) => (this.outStageOffset < 0 ? -1 : this.outStageOffset + M * o * 4));
    const job = {
      type: "job",
      M,
      K,
      xOffset: this.xStageOffset,
      chunks,
      totalRows,
      rowChunk: ROW_CHUNK,
      weights: weights.map((w, i) => ({
        id: ids[i],
        dtype: DTYPE_CODE[w.dtype],
        wOffset: this.weightOffset(w),
        N: w.rows,
        rowOffset: rowOffset[i],
        outOffset: outOffsets[i],
      })),
    };
    this.runShared(job, chunks, (chunk) => {
      const r0 = chunk * ROW_CHUNK;
      const r1 = Math.min(totalRows, r0 + ROW_CHUNK);
      weights.forEach((w, i) => {
        const lo = Math.max(r0, rowOffset[i] as number);
        const hi = Math.min(r1, (rowOffset[i] as number) + w.rows);
        if (lo < hi) {
          const o = rowOffset[i] as number;
          const out = stagedOut.subarray(M * o);
          this.runRange(stagedX, this.xStageOffset, M, w, out, outOffsets[i] as number, lo - o, hi - o);
        }
      });
    });
    weights.forEach((w, i) => {
      const o = M * (rowOffset[i] as number);
      (outs[i] as Float32Array).set(stagedOut.subarray(o, o + M * w.rows));
    });
  }

  /** Rows [n0, n1) of x · wᵀ; xOffset and outOffset place x and out in the shared memory (-1: elsewhere). */
  private runRange(
    x: Float32Array,
    xOffset: number,
    M: number,
    w: Weight,
    out: Float32Array,
    outOffset: number,
    n0: number,
    n1: number,
  ): void {
    matmulRange(
      x,
      xOffset,
      M,
      w.cols,
      DTYPE_CODE[w.dtype],
      w.data,
      this.weightOffset(w),
      w.scale?.data ?? null,
      w.scale?.blockRows ?? 1,
      w.scale?.blockCols ?? 1,
      w.mxScales ?? null,
      out,
      outOffset,
      w.rows,
      n0,
      n1,
      this.scratch,
      this.tables,
      this.simdTile,
    );
  }

  /** Where an f32 weight lies in the shared memory the SIMD tile reads (-1: elsewhere, copied). */
  private weightOffset(w: Weight): number {
    return this.arena === null || w.dtype !== "f32" ? -1 : this.arena.offsetOf(w.data);
  }

  /** Gives every thread a SIMD scratch region large enough for an M x K input. */
  private ensureSimdScratch(M: number, K: number): void {
    const tile = this.simdTile;
    if (tile === null || this.arena === null) return;
    const need = (M * K + SIMD_CHUNK * K + SIMD_CHUNK * M) * 4;
    if (tile.bytes >= need) return;
    // Grow geometrically: regions are never freed, so few and large beats many and exact.
    const bytes = Math.max(need, 2 * tile.bytes);
    const arena = this.arena;
    const bases = Array.from({ length: this.workers.length + 1 }, () => arena.allocate(bytes));
    if (bases.some((b) => b < 0)) {
      throw new BringupError(
        "ENGINE_WASM_MEMORY_FULL",
        `no room left in the 4 GiB shared matmul memory for a ${M}x${K} input; lower --max-num-batched-tokens or run with BRINGUP_ENGINE_SIMD=0.`,
      );
    }
    tile.base = bases[0] as number;
    tile.bytes = bytes;
    this.workers.forEach(({ port }, t) => {
      port.postMessage({ type: "scratch", base: bases[t + 1], bytes });
    });
  }

  /** Gives every thread an attention SIMD region of at least `need` bytes. */
  private ensureAttentionScratch(need: number): void {
    const simd = this.attnSimd;
    if (simd === null || this.arena === null || simd.bytes >= need) return;
    const bytes = Math.max(need, 2 * simd.bytes);
    const arena = this.arena;
    const bases = Array.from({ length: this.workers.length + 1 }, () => arena.allocate(bytes));
    if (bases.some((b) => b < 0)) {
      throw new BringupError(
        "ENGINE_WASM_MEMORY_FULL",
        `no room left in the 4 GiB shared kernel memory for attention over ${need} bytes of scratch; lower --max-model-len or run with BRINGUP_ENGINE_SIMD=0.`,
      );
    }
    simd.base = bases[0] as number;
    simd.bytes = bytes;
    this.workers.forEach(({ port }, t) => {
      port.postMessage({ type: "attnScratch", base: bases[t + 1], bytes });
    });
  }

  /**
   * Posts `message` to every helper with `base`, where the shared counter starts, then claims units
   * from the counter alongside them until all `units` are taken, and waits for the last to finish:
   * a thread that starts late or runs slow (a busy machine) leaves its share to the others.
   */
  private runShared(message: object, units: number, runUnit: (unit: number) => void): void {
    const base = Atomics.load(this.ctrl, NEXT);
    const finishedBase = Atomics.load(this.ctrl, FINISHED);
    for (const { port } of this.workers) port.postMessage({ ...message, base });
    Atomics.add(this.ctrl, SEQ, 1);
    Atomics.notify(this.ctrl, SEQ);
    for (;;) {
      const c = Atomics.load(this.ctrl, NEXT);
      // Differences in int32 arithmetic: the counters wrap around on a long-running server.
      const unit = (c - base) | 0;
      if (unit >= units) break;
      if (Atomics.compareExchange(this.ctrl, NEXT, c, c + 1) !== c) continue;
      runUnit(unit);
      Atomics.add(this.ctrl, FINISHED, 1);
    }
    this.waitForChunks(finishedBase + units);
  }

  /** Waits until the FINISHED counter reaches `target` (chunks claimed by helpers are done). */
  private waitForChunks(target: number): void {
    const started = Date.now();
    const spinUntil = performance.now() + 0.2;
    while (((Atomics.load(this.ctrl, FINISHED) - target) | 0) < 0 && performance.now() < spinUntil);
    for (;;) {
      const done = Atomics.load(this.ctrl, FINISHED);
      if (((done - target) | 0) >= 0 || Atomics.load(this.ctrl, FAILED) !== 0) break;
      if (
        Atomics.wait(this.ctrl, FINISHED, done, 1000) === "timed-out" &&
        Date.now() - started > WORKER_STALL_MS
      ) {
        Atomics.store(this.ctrl, FAILED, 1);
        break;
      }
    }
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (Atomics.load(this.ctrl, FAILED) !== 0) {
      const reasons: string[] = [];
      for (const { port } of this.workers) {
        for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
          if (m.message?.type === "error") reasons.push(m.message.message);
        }
      }
      throw new BringupError(
        "ENGINE_WORKER_FAILED",
        `a matmul worker thread failed (${reasons.join("; ") || "it stopped answering"}); restart the engine.`,
      );
    }
  }

  /**
   * gate = silu(gate) · up over n values. With SIMD: the kernel of swiglu-simd-module.ts (several
   * times faster than Math.exp) over copies staged in the shared memory, split between the
   * threads in ranges of whole vectors (each value is computed alone, so the split changes no
   * bits); otherwise swiglu.ts's on the calling thread.
   */
  swiglu(gate: Float32Array, up: Float32Array, n: number): void {
    const simd = this.swigluSimd;
    const padded = (n + 3) & ~3;
    const staged = simd === null ? null : this.stage("x", 2 * padded);
    if (simd === null || staged === null || this.xStageOffset < 0) {
      swiglu(gate, up, n);
      return;
    }
    staged.set(gate.subarray(0, n));
    staged.set(up.subarray(0, n), padded);
    const g = this.xStageOffset;
    const u = g + padded * 4;
    const vectors = padded >> 2;
    const helpers = this.workers.length;
    if (helpers === 0 || this.closed || n < SWIGLU_PARALLEL_MIN) simd.swiglu(g, u, vectors);
    else {
      const units = Math.min(vectors, 4 * (helpers + 1));
      this.runShared({ type: "swiglu", units, vectors, g, u }, units, (unit) => {
        const v0 = Math.floor((unit * vectors) / units);
        const v1 = Math.floor(((unit + 1) * vectors) / units);
        simd.swiglu(g + 16 * v0, u + 16 * v0, v1 - v0);
      });
    }
    gate.set(staged.subarray(0, n));
  }

  /**
   * Attention for every token of a step (see attendTokens), split between the threads by cost
   * (the number of positions each token reads), so long prefills use every core.
   */
  attention(job: AttentionJob): void {
    const { meta, numHeads, headDim, vHeadDim } = job;
    const T = meta.length / 3;
    const cost = new Float64Array(T + 1);
    for (let t = 0; t < T; t++)
      cost[t + 1] = (cost[t] as number) + ((meta[3 * t] as number) - (meta[3 * t + 1] as number) + 1);
    const total = cost[T] as number;
    const helpers = this.workers.length;
    const simd = this.attnSimd !== null && headDim % 4 === 0 && vHeadDim % 8 === 0 ? this.attnSimd : null;
    if (simd !== null) {
      let maxSpan = 0;
      for (let t = 0; t < T; t++) maxSpan = Math.max(maxSpan, (cost[t + 1] as number) - (cost[t] as number));
      this.ensureAttentionScratch(
        attentionSimdBytes(
          ATTENTION_TILE,
          numHeads,
          job.numKvHeads,
          headDim,
          vHeadDim,
          maxSpan + ATTENTION_TILE - 1,
        ),
      );
    }
    const run = (q: Float32Array, out: Float32Array, t0: number, t1: number) => {
      const args = [
        t0,
        t1,
        meta,
        job.tables,
        job.blockSize,
        job.ringBlocks,
        q,
        out,
        job.keys,
        job.values,
        numHeads,
        job.numKvHeads,
        headDim,
        vHeadDim,
        job.scale,
        job.sinks,
        this.attnScratch,
      ] as const;
      if (simd === null) attendTokens(...args, ATTENTION_TILE);
      else attendTokensSimd(...args, simd, attendTokens, ATTENTION_TILE, SIMD_POSITION_BLOCK);
    };
    if (helpers === 0 || this.closed || total * numHeads * (headDim + vHeadDim) < PARALLEL_MIN_MACS) {
      run(job.q, job.out, 0, T);
      return;
    }
    const id = this.registerKv(job.keys, job.values);
    const qLen = T * numHeads * headDim;
    const outLen = T * numHeads * vHeadDim;
    const stagedQ = this.stage("x", qLen);
    stagedQ.set(job.q.subarray(0, qLen));
    const stagedOut = this.stage("out", outLen);
    // Units of about equal cost (positions read), claimed from the shared counter like matmul
    // rows. A prefill keeps units of at least a tile so its keys are still read once per tile.
    const parts = helpers + 1;
    const U =
      T >= parts * ATTENTION_TILE
        ? Math.min(4 * parts, Math.floor(T / ATTENTION_TILE))
        : Math.min(T, 4 * parts);
    const bounds = [0];
    for (let u = 1; u < U; u++) {
      let t = bounds[bounds.length - 1] as number;
      while (t < T && (cost[t] as number) < (total * u) / U) t++;
      if (t > (bounds[bounds.length - 1] as number) && t < T) bounds.push(t);
    }
    bounds.push(T);
    const units = bounds.length - 1;
    const message = {
      type: "attn",
      id,
      bounds,
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
      simd: simd !== null,
      tile: ATTENTION_TILE,
      positionBlock: SIMD_POSITION_BLOCK,
    };
    this.runShared(message, units, (u) =>
      run(stagedQ, stagedOut, bounds[u] as number, bounds[u + 1] as number),
    );
    job.out.set(stagedOut.subarray(0, outLen));
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
    const id = this.nextWeightId++;
    this.weightIds.set(w, id);
    for (const { port } of this.workers) {
      port.postMessage({
        type: "weight",
        id,
        data: w.data,
        scaleData: w.scale?.data ?? null,
        scaleBlockRows: w.scale?.blockRows ?? 1,
        scaleBlockCols: w.scale?.blockCols ?? 1,
        mxScales: w.mxScales ?? null,
      });
    }
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
    const id = this.nextWeightId++;
    this.kvIds.set(keys, id);
    for (const { port } of this.workers) port.postMessage({ type: "kv", id, keys, values });
    return id;
  }

  /**
   * The staged input or output of a dispatch, at least `length` floats, shared with the workers.
   * With the SIMD tile it lies in the shared WebAssembly memory, so the tile reads the input and
   * writes the output where they lie instead of copying them through its scratch.
   */
  private stage(which: "x" | "out", length: number): Float32Array {
    const current = which === "x" ? this.xStage : this.outStage;
    if (current.length >= length) return current;
    const grownLength = Math.max(length, current.length * 2);
    const offset = this.arena === null ? -1 : this.arena.allocate(grownLength * 4);
    const grown =
      offset < 0
        ? new Float32Array(new SharedArrayBuffer(grownLength * 4))
        : new Float32Array((this.arena as WasmArena).memory.buffer, offset, grownLength);
    if (which === "x") {
      this.xStage = grown;
      this.xStageOffset = offset;
    } else {
      this.outStage = grown;
      this.outStageOffset = offset;
    }
    for (const { port } of this.workers) port.postMessage({ type: "stage", which, buffer: grown });
    return grown;
  }
}

/**
 * The worker loop: sleep on the sequence slot, then drain this worker's port synchronously
 * (registrations first, in order, then the job), claiming the job's chunks from the NEXT slot and
 * counting each finished one on the FINISHED slot.
 */
function workerMain(
  kernel: typeof matmulRange,
  attend: typeof attendTokens,
  attendSimd: typeof attendTokensSimd,
  buildTables: typeof buildDecodeTables,
  threads: typeof import("node:worker_threads"),
): void {
  const { ctrl, port, module, attnModule, swigluModule, memory } = threads.workerData as {
    ctrl: Int32Array;
    port: MessagePort;
    module: WasmModule | undefined;
    attnModule: WasmModule | undefined;
    swigluModule: WasmModule | undefined;
    memory: SimdTile["memory"] | undefined;
  };
  const tables = buildTables();
  const api = (
    globalThis as unknown as {
      WebAssembly: { Instance: new (m: WasmModule, i: object) => { exports: unknown } };
    }
  ).WebAssembly;
  /** The exports of `wasm` over the shared memory, or null where either is missing. */
  const instantiate = (wasm: WasmModule | undefined): unknown =>
    wasm === undefined || memory === undefined ? null : new api.Instance(wasm, { env: { memory } }).exports;
  const tile = instantiate(module) as Pick<SimdTile, "tile"> | null;
  const simd: SimdTile | null =
    tile === null ? null : { tile: tile.tile, memory: memory as SimdTile["memory"], base: 0, bytes: 0 };
  const attn = instantiate(attnModule) as AttentionSimd | null;
  const attnSimd: AttentionSimd | null =
    attn === null
      ? null
      : {
          dot4: attn.dot4,
          dot1: attn.dot1,
          vacc2: attn.vacc2,
          vacc1: attn.vacc1,
          memory: memory as SimdTile["memory"],
          base: 0,
          bytes: 0,
        };
  const swigluSimd = instantiate(swigluModule) as SwigluSimd | null;
  type Registered = {
    data: Float32Array | Uint16Array | Uint8Array;
    scaleData: Float32Array | null;
    scaleBlockRows: number;
    scaleBlockCols: number;
    mxScales: Uint8Array | null;
  };
  const weights = new Map<number, Registered>();
  const kvs = new Map<number, { keys: Float32Array; values: Float32Array }>();
  const attnScratch = {
    scores: new Float64Array(256),
    acc: new Float64Array(64),
    slots: new Int32Array(256),
  };
  let x = new Float32Array(1);
  let out = new Float32Array(1);
  let scratch = new Float32Array(1);
  /**
   * Claims units of a job from the shared counter (NEXT, slot 3) until none are left, running each
   * and counting it in FINISHED (slot 4); a failure is reported and flagged (slot 2).
   */
  const claimUnits = (base: number, units: number, runUnit: (unit: number) => void): void => {
    try {
      for (;;) {
        const c = Atomics.load(ctrl, 3);
        const unit = (c - base) | 0;
        if (unit >= units || unit < 0) break;
        if (Atomics.compareExchange(ctrl, 3, c, c + 1) !== c) continue;
        runUnit(unit);
        Atomics.add(ctrl, 4, 1);
        Atomics.notify(ctrl, 4);
      }
    } catch (error) {
      port.postMessage({ type: "error", message: String((error as Error)?.stack ?? error) });
      Atomics.store(ctrl, 2, 1);
      Atomics.notify(ctrl, 4);
    }
  };
  // Start from 0, not the current value: jobs posted before this thread started are already queued.
  let seen = 0;
  for (;;) {
    // Jobs come back to back within a step: spin a moment before sleeping, as waking from
    // Atomics.wait costs about as much as a small matmul.
    const spinUntil = performance.now() + 0.5;
    while (Atomics.load(ctrl, 0) === seen && performance.now() < spinUntil);
    Atomics.wait(ctrl, 0, seen);
    seen = Atomics.load(ctrl, 0);
    for (;;) {
      const received = threads.receiveMessageOnPort(port);
      if (received === undefined) break;
      const msg = received.message;
      if (msg.type === "weight") weights.set(msg.id, msg);
      else if (msg.type === "kv") kvs.set(msg.id, msg);
      else if (msg.type === "scratch" && simd !== null) {
        simd.base = msg.base;
        simd.bytes = msg.bytes;
      } else if (msg.type === "attnScratch" && attnSimd !== null) {
        attnSimd.base = msg.base;
        attnSimd.bytes = msg.bytes;
      } else if (msg.type === "attn") {
        // Units of tokens, claimed as for matmul rows.
        const kv = kvs.get(msg.id) as { keys: Float32Array; values: Float32Array };
        claimUnits(msg.base, msg.bounds.length - 1, (u) => {
          const args = [
            msg.bounds[u],
            msg.bounds[u + 1],
            msg.meta,
            msg.tables,
            msg.blockSize,
            msg.ringBlocks,
            x,
            out,
            kv.keys,
            kv.values,
            msg.numHeads,
            msg.numKvHeads,
            msg.headDim,
            msg.vHeadDim,
            msg.scale,
            msg.sinks,
            attnScratch,
          ] as const;
          if (msg.simd && attnSimd !== null)
            attendSimd(...args, attnSimd, attend, msg.tile, msg.positionBlock);
          else attend(...args, msg.tile);
        });
      } else if (msg.type === "swiglu") {
        // Ranges of vectors, claimed as for matmul rows.
        claimUnits(msg.base, msg.units, (unit) => {
          const v0 = Math.floor((unit * msg.vectors) / msg.units);
          const v1 = Math.floor(((unit + 1) * msg.vectors) / msg.units);
          (swigluSimd as SwigluSimd).swiglu(msg.g + 16 * v0, msg.u + 16 * v0, v1 - v0);
        });
      } else if (msg.type === "stage") {
        if (msg.which === "x") x = msg.buffer;
        else out = msg.buffer;
      } else if (msg.type === "job") {
        // Chunks of rows (a late arrival finds none left and stops).
        if (scratch.length < 4 * msg.K) scratch = new Float32Array(4 * msg.K);
        claimUnits(msg.base, msg.chunks, (d) => {
          const r0 = d * msg.rowChunk;
          const r1 = Math.min(msg.totalRows, r0 + msg.rowChunk);
          for (const seg of msg.weights) {
            const lo = Math.max(r0, seg.rowOffset);
            const hi = Math.min(r1, seg.rowOffset + seg.N);
            if (lo >= hi) continue;
            const w = weights.get(seg.id) as Registered;
            kernel(
              x,
              msg.xOffset,
              msg.M,
              msg.K,
              seg.dtype,
              w.data,
              seg.wOffset,
              w.scaleData,
              w.scaleBlockRows,
              w.scaleBlockCols,
              w.mxScales,
              out.subarray(msg.M * seg.rowOffset),
              seg.outOffset,
              seg.N,
              lo - seg.rowOffset,
              hi - seg.rowOffset,
              scratch,
              tables,
              simd,
            );
          }
        });
      }
    }
  }
}

// Some TypeScript runners (esbuild with keepNames, as tsx uses) wrap inner functions in a __name
// helper that exists only in the main bundle; the worker defines a no-op one.
const WORKER_SOURCE = `"use strict";
const __name = (f) => f;
const threads = require("node:worker_threads");
(${workerMain.toString()})((${matmulRange.toString()}), (${attendTokens.toString()}), (${attendTokensSimd.toString()}), (${buildDecodeTables.toString()}), threads);
`;
