import { availableParallelism } from "node:os";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { BringupError } from "../../common/errors.js";
import { DTYPE_CODE, type Weight } from "../tensor/weight.js";
import { buildDecodeTables, type DecodeTables, matmulRange } from "./matmul-kernel.js";

/** Below this many multiply-adds a matmul stays on the calling thread: waking workers costs more. */
const PARALLEL_MIN_MACS = 1 << 16;

/** Control slots in the shared Int32Array. */
const SEQ = 0;
/** How long a matmul may wait for its helpers before the pool declares them dead. */
const WORKER_STALL_MS = 120_000;
const DONE = 1;
const FAILED = 2;

/**
 * Runs matmuls on the calling thread plus `threads - 1` worker threads that share weights and
 * activations through SharedArrayBuffers. Output rows are split into contiguous ranges; every element
 * is computed by the same kernel in the same order, so the result does not depend on the split.
 * The calling thread blocks (Atomics.wait) until its helpers finish: a step is synchronous.
 */
export class MatmulPool {
  readonly threads: number;
  private readonly tables: DecodeTables = buildDecodeTables();
  private readonly ctrl = new Int32Array(new SharedArrayBuffer(16));
  private readonly workers: { worker: Worker; port: MessagePort }[] = [];
  private readonly weightIds = new WeakMap<Weight, number>();
  private nextWeightId = 0;
  private xStage = new Float32Array(new SharedArrayBuffer(4));
  private outStage = new Float32Array(new SharedArrayBuffer(4));
  private scratch = new Float32Array(1);
  private closed = false;

  constructor(threads: number = availableParallelism()) {
    if (!Number.isInteger(threads) || threads < 1) {
      throw new BringupError("ENGINE_THREADS", `threads must be a positive integer, got ${threads}.`);
    }
    this.threads = threads;
    for (let i = 1; i < threads; i++) {
      const { port1, port2 } = new MessageChannel();
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { ctrl: this.ctrl, port: port2 },
        transferList: [port2],
      });
      worker.unref();
      this.workers.push({ worker, port: port1 });
    }
  }

  /** out[M, w.rows] = x[M, w.cols] · wᵀ, dequantizing narrow weights row by row. */
  matmul(x: Float32Array, M: number, w: Weight, out: Float32Array): void {
    const K = w.cols;
    const N = w.rows;
    if (x.length < M * K || out.length < M * N) {
      throw new BringupError(
        "ENGINE_SHAPE",
        `matmul buffers too small: x ${x.length} < ${M}x${K} or out ${out.length} < ${M}x${N}.`,
      );
    }
    if (this.scratch.length < 4 * K) this.scratch = new Float32Array(4 * K);
    const dtype = DTYPE_CODE[w.dtype];
    const scale = w.scale;
    const helpers = this.workers.length;
    if (helpers === 0 || M * K * N < PARALLEL_MIN_MACS || this.closed) {
      matmulRange(
        x,
        M,
        K,
        dtype,
        w.data,
        scale?.data ?? null,
        scale?.blockRows ?? 1,
        scale?.blockCols ?? 1,
        w.mxScales ?? null,
        out,
        N,
        0,
        N,
        this.scratch,
        this.tables,
      );
      return;
    }
    const id = this.register(w);
    const stagedX = this.stage("x", M * K);
    stagedX.set(x.subarray(0, M * K));
    const stagedOut = this.stage("out", M * N);
    const parts = helpers + 1;
    const chunk = Math.ceil(N / parts);
    Atomics.store(this.ctrl, DONE, 0);
    let expected = 0;
    for (let i = 0; i < helpers; i++) {
      const n0 = Math.min(N, (i + 1) * chunk);
      const n1 = Math.min(N, (i + 2) * chunk);
      if (n0 >= n1) continue;
      expected++;
      this.workers[i]?.port.postMessage({ type: "job", id, M, K, N, n0, n1, dtype });
    }
    Atomics.add(this.ctrl, SEQ, 1);
    Atomics.notify(this.ctrl, SEQ);
    matmulRange(
      stagedX,
      M,
      K,
      dtype,
      w.data,
      scale?.data ?? null,
      scale?.blockRows ?? 1,
      scale?.blockCols ?? 1,
      w.mxScales ?? null,
      stagedOut,
      N,
      0,
      Math.min(N, chunk),
      this.scratch,
      this.tables,
    );
    const started = Date.now();
    for (;;) {
      const done = Atomics.load(this.ctrl, DONE);
      if (done >= expected) break;
      // A worker that died cannot say so while this thread blocks, so give up after a long wait.
      if (
        Atomics.wait(this.ctrl, DONE, done, 1000) === "timed-out" &&
        Date.now() - started > WORKER_STALL_MS
      ) {
        Atomics.store(this.ctrl, FAILED, 1);
        break;
      }
    }
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
    out.set(stagedOut.subarray(0, M * N));
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

  private stage(which: "x" | "out", length: number): Float32Array {
    const current = which === "x" ? this.xStage : this.outStage;
    if (current.length >= length) return current;
    const grown = new Float32Array(new SharedArrayBuffer(Math.max(length, current.length * 2) * 4));
    if (which === "x") this.xStage = grown;
    else this.outStage = grown;
    for (const { port } of this.workers) port.postMessage({ type: "stage", which, buffer: grown });
    return grown;
  }
}

/**
 * The worker loop: sleep on the sequence slot, then drain this worker's port synchronously
 * (registrations first, in order, then the job) and report completion on the DONE slot.
 */
function workerMain(
  kernel: typeof matmulRange,
  buildTables: typeof buildDecodeTables,
  threads: typeof import("node:worker_threads"),
): void {
  const { ctrl, port } = threads.workerData as { ctrl: Int32Array; port: MessagePort };
  const tables = buildTables();
  type Registered = {
    data: Float32Array | Uint16Array | Uint8Array;
    scaleData: Float32Array | null;
    scaleBlockRows: number;
    scaleBlockCols: number;
    mxScales: Uint8Array | null;
  };
  const weights = new Map<number, Registered>();
  let x = new Float32Array(1);
  let out = new Float32Array(1);
  let scratch = new Float32Array(1);
  // Start from 0, not the current value: jobs posted before this thread started are already queued.
  let seen = 0;
  for (;;) {
    Atomics.wait(ctrl, 0, seen);
    seen = Atomics.load(ctrl, 0);
    for (;;) {
      const received = threads.receiveMessageOnPort(port);
      if (received === undefined) break;
      const msg = received.message;
      if (msg.type === "weight") weights.set(msg.id, msg);
      else if (msg.type === "stage") {
        if (msg.which === "x") x = msg.buffer;
        else out = msg.buffer;
      } else if (msg.type === "job") {
        try {
          const w = weights.get(msg.id) as Registered;
          if (scratch.length < 4 * msg.K) scratch = new Float32Array(4 * msg.K);
          kernel(
            x,
            msg.M,
            msg.K,
            msg.dtype,
            w.data,
            w.scaleData,
            w.scaleBlockRows,
            w.scaleBlockCols,
            w.mxScales,
            out,
            msg.N,
            msg.n0,
            msg.n1,
            scratch,
            tables,
          );
        } catch (error) {
          port.postMessage({ type: "error", message: String((error as Error)?.stack ?? error) });
          Atomics.store(ctrl, 2, 1);
        }
        Atomics.add(ctrl, 1, 1);
        Atomics.notify(ctrl, 1);
      }
    }
  }
}

// Some TypeScript runners (esbuild with keepNames, as tsx uses) wrap inner functions in a __name
// helper that exists only in the main bundle; the worker defines a no-op one.
const WORKER_SOURCE = `"use strict";
const __name = (f) => f;
const threads = require("node:worker_threads");
(${workerMain.toString()})((${matmulRange.toString()}), (${buildDecodeTables.toString()}), threads);
`;
