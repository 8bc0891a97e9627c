import { instantiateWasm, type WasmMemory, type WasmModule } from "../../common/wasm-runtime.js";
import { type IndexerScoresSimd, instantiateIndexerScores } from "./indexer-scores/indexer-simd-module.js";
import { type Fp8Modules, instantiateFp8Rows } from "./matmul/fp8-rows.js";
import {
  buildDecodeTables,
  type MatmulThread,
  type Mxfp4Rows,
  type WeightParts,
} from "./matmul/matmul-kernel.js";
import type { Int8Quantize, Mxfp4Int8 } from "./matmul/mxfp4-int8.js";
import { instantiateTile } from "./matmul/tile-module.js";
import type { AttentionScratch, AttentionSimd } from "./paged-attention/attention-kernel.js";
import { instantiateAttentionSimd } from "./paged-attention/attention-simd-module.js";
import { instantiateSwigluSimd, type SwigluSimd } from "./swiglu/swiglu-simd-module.js";

/** The compiled WebAssembly kernels a pool runs (each absent where SIMD is off or unavailable). */
export interface KernelModules {
  readonly tile?: WasmModule;
  /**
   * The fused MXFP4 rows, built like the tile (fused or not), where their tables lie (mxfp4Tables:
   * half scales, then the decode's bytes), and from how many input rows they decode into scratch for
   * the tile (see Mxfp4Rows).
   */
  readonly mxfp4?: {
    readonly module: WasmModule;
    /** Its `.halves` build, for codes in halves order (Weight.mxfp4Order). */
    readonly halves: WasmModule;
    /** matmul/mxfp4-decode.wat, relaxed or plain. */
    readonly decode: WasmModule;
    /** Its `.halves` build, for codes in halves order (Weight.mxfp4Order). */
    readonly decodeHalves: WasmModule;
    readonly halfScales: number;
    readonly scratchTokens: number;
  };
  /** The integer MXFP4 path (relaxed dot products, or their plain form). */
  readonly mxfp4Int8?: { readonly module: WasmModule };
  /**
   * The block-scaled FP8 rows' SIMD kernels for both code orders, built like the tile (fused or
   * not), and from how many input rows they decode into scratch for the tile (see Fp8Rows).
   */
  readonly fp8?: Fp8Modules;
  readonly attention?: WasmModule;
  readonly swiglu?: WasmModule;
  readonly indexer?: WasmModule;
}

/**
 * What one thread of the pool holds: its kernel instances over the shared memory, the weights and
 * KV caches registered with it, the staged input and output of a dispatch, and its scratch. The
 * calling thread keeps one and each worker keeps one, changed by the same messages.
 */
export interface KernelThread extends MatmulThread {
  readonly attention: AttentionSimd | null;
  readonly swiglu: SwigluSimd | null;
  readonly indexer: IndexerScoresSimd | null;
  readonly weights: Map<number, WeightParts>;
  readonly kvs: Map<number, { readonly keys: Float32Array; readonly values: Float32Array }>;
  readonly attentionScratch: AttentionScratch;
  /** The shared WebAssembly memory (absent without SIMD). */
  readonly memory: WasmMemory | undefined;
  x: Float32Array;
  out: Float32Array;
}

/**
 * `length` floats of the shared memory from byte `offset` as this thread sees it: a dispatch's
 * input or output that the caller had there (a replayed step's buffer) rather than in the staged
 * arrays. Null without a shared memory.
 */
export function sharedFloats(thread: KernelThread, offset: number, length: number): Float32Array | null {
  return thread.memory === undefined ? null : new Float32Array(thread.memory.buffer, offset, length);
}

/** A kernel that runs a dispatch's units on any thread from its typed parameters. */
export interface ThreadKernel<Params> {
  /**
   * Runs unit `unit`. `next` is the unit this thread runs after it, already claimed, where the
   * kernel claims ahead; otherwise -1.
   */
  run(thread: KernelThread, params: Params, unit: number, next: number): void;
  /**
   * Whether a thread claims its next unit before running one, so the kernel can read that unit's
   * weights ahead while it computes (matmul/matmul-tile.wat). At a dispatch's end a thread may hold
   * a unit another would have taken; claiming ahead only among a matmul's whole chunks, not its
   * quarter-chunk tail (row-units.ts), measured no different (bench-100m, 16 streams: 0.986x
   * [0.960, 1.013]).
   */
  readonly claimsAhead?: boolean;
}

export function kernelThread(modules: KernelModules, memory: WasmMemory | undefined): KernelThread {
  const instance = <M, T>(module: M | undefined, make: (m: M, mem: WasmMemory) => T) =>
    module === undefined || memory === undefined ? null : make(module, memory);
  return {
    tables: buildDecodeTables(),
    scratch: new Float32Array(1),
    tile: instance(modules.tile, instantiateTile),
    mxfp4: instance(modules.mxfp4?.module, (m, mem) => {
      const inLoop = (module: WasmModule | undefined) =>
        (instantiateWasm(module as WasmModule, mem) as { mxfp4: Mxfp4Rows["rows"] }).mxfp4;
      const decoder = (module: WasmModule | undefined) =>
        (instantiateWasm(module as WasmModule, mem) as { decode: Mxfp4Rows["decode"] }).decode;
      return {
        rows: inLoop(m),
        rowsHalves: inLoop(modules.mxfp4?.halves),
        decode: decoder(modules.mxfp4?.decode),
        decodeHalves: decoder(modules.mxfp4?.decodeHalves),
        halfScales: modules.mxfp4?.halfScales as number,
        scratchTokens: modules.mxfp4?.scratchTokens as number,
      };
    }),
    mxfp4Int8: instance(modules.mxfp4Int8?.module, (m, mem) => {
      const exports = instantiateWasm(m, mem) as { mxfp4_int8: Mxfp4Int8; quantize: Int8Quantize };
      return { rows: exports.mxfp4_int8, quantize: exports.quantize };
    }),
    fp8: instance(modules.fp8, instantiateFp8Rows),
    attention: instance(modules.attention, instantiateAttentionSimd),
    swiglu: instance(modules.swiglu, instantiateSwigluSimd),
    indexer: instance(modules.indexer, instantiateIndexerScores),
    weights: new Map(),
    kvs: new Map(),
    attentionScratch: {
      scores: new Float64Array(256),
      acc: new Float64Array(64),
      slots: new Int32Array(256),
    },
    memory,
    x: new Float32Array(1),
    out: new Float32Array(1),
  };
}

/** Messages that change a thread's state; every thread applies them in the order they were sent. */
export type StateMessage =
  | { readonly type: "weight"; readonly id: number; readonly parts: WeightParts }
  | { readonly type: "kv"; readonly id: number; readonly keys: Float32Array; readonly values: Float32Array }
  | { readonly type: "stage"; readonly which: "x" | "out"; readonly buffer: Float32Array }
  | {
      readonly type: "scratch";
      readonly kernel: "tile" | "attention";
      readonly base: number;
      readonly bytes: number;
    };

export function applyState(thread: KernelThread, message: StateMessage): void {
  switch (message.type) {
    case "weight":
      thread.weights.set(message.id, message.parts);
      break;
    case "kv":
      thread.kvs.set(message.id, { keys: message.keys, values: message.values });
      break;
    case "stage":
      thread[message.which] = message.buffer;
      break;
    case "scratch": {
      const region = message.kernel === "tile" ? thread.tile : thread.attention;
      if (region !== null) {
        region.base = message.base;
        region.bytes = message.bytes;
      }
      break;
    }
  }
}

/** The shared memory as a worker holds it: growing it by 0 pages brings its view up to date. */
export interface GrowableMemory extends WasmMemory {
  grow(pages: number): number;
}

/**
 * Makes `memory.buffer` cover at least `bytes`. Another thread's grow reaches this one's
 * `memory.buffer` only when V8 handles the interrupt that grow sends, at a later stack check (a
 * wait that returns at once, or inlined calls, pass none), so a job can name offsets past this
 * thread's view; a grow by 0 pages refreshes the view in this thread at once.
 */
export function coverMemory(memory: GrowableMemory | undefined, bytes: number): void {
  if (memory !== undefined && memory.buffer.byteLength < bytes) memory.grow(0);
}

/** Slots of the pool's shared Int32Array. */
export const CONTROL = {
  /** Bumped once per dispatch: the workers sleep on it. */
  SEQ: 0,
  /** Non-zero once a thread failed. */
  FAILED: 2,
  /** Next unclaimed unit of a dispatch (grows forever: each dispatch owns a range of values). */
  NEXT: 3,
  /** Units finished (grows forever, like NEXT). */
  FINISHED: 4,
  /**
   * The base of the last gated dispatch whose inputs the caller has finished writing
   * (JobMessage.gated): it and every dispatch before it are open.
   */
  READY: 5,
} as const;

/** A pool's control slots, shared with its helpers: no dispatch yet, none open (READY before 0). */
export function controlSlots(): Int32Array {
  const ctrl = new Int32Array(new SharedArrayBuffer(32));
  ctrl[CONTROL.READY] = -1;
  return ctrl;
}

/**
 * How long a helper spins on READY before it sleeps: the caller's remaining writes take tens of
 * microseconds, and a helper that fell asleep would take another wake-up (about 50 µs) to return.
 */
const READY_SPIN_MS = 0.5;

/**
 * Returns once the caller has opened the gated dispatch starting at `base` (READY at it or past
 * it: a helper that starts late drains older jobs too): a helper that wakes before the caller has
 * written all of its inputs waits for them here.
 */
export function awaitInputs(ctrl: Int32Array, base: number): void {
  const spinUntil = performance.now() + READY_SPIN_MS;
  for (;;) {
    const ready = Atomics.load(ctrl, CONTROL.READY);
    // Differences in int32 arithmetic, as claimUnits takes them: the counters wrap around.
    if (((ready - base) | 0) >= 0) return;
    if (performance.now() > spinUntil) Atomics.wait(ctrl, CONTROL.READY, ready);
  }
}

/**
 * Claims units of a dispatch whose counter starts at `base` from the shared NEXT slot until all
 * `units` are taken, running each and counting it in FINISHED: a thread that starts late or runs
 * slow (a busy machine) leaves its share to the others. With `ahead`, a thread claims its next
 * unit before it runs one and tells runUnit which (ThreadKernel.claimsAhead); otherwise next is -1.
 */
export function claimUnits(
  ctrl: Int32Array,
  base: number,
  units: number,
  runUnit: (unit: number, next: number) => void,
  ahead = false,
): void {
  for (let unit = claimUnit(ctrl, base, units); unit >= 0; ) {
    const next = ahead ? claimUnit(ctrl, base, units) : -1;
    runUnit(unit, next);
    Atomics.add(ctrl, CONTROL.FINISHED, 1);
    Atomics.notify(ctrl, CONTROL.FINISHED);
    unit = ahead ? next : claimUnit(ctrl, base, units);
  }
}

/** The next unclaimed unit of the dispatch, now claimed, or -1 when all are taken. */
function claimUnit(ctrl: Int32Array, base: number, units: number): number {
  for (;;) {
    const c = Atomics.load(ctrl, CONTROL.NEXT);
    // Differences in int32 arithmetic: the counters wrap around on a long-running server.
    const unit = (c - base) | 0;
    if (unit >= units || unit < 0) return -1;
    if (Atomics.compareExchange(ctrl, CONTROL.NEXT, c, c + 1) === c) return unit;
  }
}
