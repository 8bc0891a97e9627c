import { describe, expect, it } from "vitest";
import { wasmApi } from "../../../common/wasm-runtime.js";
import type { KernelThread } from "../kernel-thread.js";
import { type MatmulJob, matmulJob, weightsAt } from "./matmul-job.js";
import type { WeightParts } from "./matmul-kernel.js";
import { matmulSwigluJob } from "./matmul-swiglu-job.js";
import { rowUnits } from "./row-units.js";
import { compileSimdTile, instantiateTile } from "./tile-module.js";

const K = 8;
const M = 8;

/** An f32 weight in row quads lying at byte `offset` of the shared memory, as the pool registers it. */
function f32Parts(offset: number, dtype = 0): WeightParts {
  return {
    dtype,
    data: new Float32Array(0),
    offset,
    scalesOffset: -1,
    scaleData: null,
    scaleBlockRows: 1,
    scaleBlockCols: 1,
    mxScales: null,
    halves: false,
    int8Exponents: -1,
    quads: true,
    fp8FoldedScales: -1,
    fp8NanFree: false,
    fp8Order: "file",
  };
}

/**
 * A thread whose quads tile records, for each call, the weights it multiplies and those it is
 * told to read ahead (then computes as always); weights 0 and 1 lie at 8192 and 16384.
 */
function recordingThread() {
  if (wasmApi === undefined) throw new Error("this runtime has no WebAssembly");
  const memory = new wasmApi.Memory({ initial: 1, maximum: 1, shared: true });
  const tile = instantiateTile(compileSimdTile(true) as object, memory);
  tile.bytes = 8192;
  const calls: [number, number][] = [];
  const quads = tile.quads;
  tile.quads = (k, m, x, w, o, g, ldo, ahead, acc) => {
    calls.push([w, ahead]);
    quads(k, m, x, w, o, g, ldo, ahead, acc);
  };
  const weights = new Map([
    [0, f32Parts(8192)],
    [1, f32Parts(16384)],
  ]);
  const thread = {
    tile,
    weights,
    memory,
    mxfp4: null,
    x: new Float32Array(M * K),
    out: new Float32Array(M * 256),
  };
  return { thread: thread as unknown as KernelThread, calls };
}

/** A dispatch over weights 0 (72 rows) and 1 (56 rows): eight units of 16 rows on two threads. */
function job(): MatmulJob {
  return {
    M,
    K,
    xOffset: 0,
    xPairs: 0,
    totalRows: 128,
    units: rowUnits(128, 64, 2),
    segments: [
      { id: 0, N: 72, rowOffset: 0, outOffset: -1 },
      { id: 1, N: 56, rowOffset: 72, outOffset: -1 },
    ],
    quantized: -1,
  };
}

const row = (weightAt: number, r: number) => weightAt + r * K * 4;

describe("what a matmul unit reads ahead", () => {
  it("the next weight's rows within the unit, then the next unit's this thread holds", () => {
    const { thread, calls } = recordingThread();
    // Unit 4 is rows 64-79: weight 0's rows 64-71, then weight 1's rows 0-7. Unit 6 starts at
    // row 96, weight 1's row 24.
    matmulJob.run(thread, job(), 4, 6);
    expect(calls).toEqual([
      [row(8192, 64), row(16384, 0)],
      [row(16384, 0), row(16384, 24)],
    ]);
    calls.length = 0;
    matmulJob.run(thread, job(), 0, -1);
    expect(calls).toEqual([[row(8192, 0), -1]]);
  });

  it("in the fused MLP: the gate's rows read the up weight's, those the next unit's gate rows", () => {
    const { thread, calls } = recordingThread();
    const fused = { ...job(), totalRows: 112, units: rowUnits(56, 64, 2), I: 56 };
    const gateUp = [
      { id: 0, N: 56, rowOffset: 0, outOffset: 24576 },
      { id: 1, N: 56, rowOffset: 56, outOffset: 28672 },
    ];
    const withSwiglu = { ...thread, swiglu: { swiglu: () => {} } } as unknown as KernelThread;
    matmulSwigluJob.run(withSwiglu, { ...fused, segments: gateUp }, 1, 3);
    expect(calls).toEqual([
      [row(8192, 16), row(16384, 16)],
      [row(16384, 16), row(8192, 48)],
    ]);
  });

  it("only f32 weights that lie in the shared memory", () => {
    const { thread } = recordingThread();
    const seg = { id: 2, N: 4, rowOffset: 0, outOffset: -1 };
    thread.weights.set(2, f32Parts(4096, 4));
    expect(weightsAt(thread, job(), seg, 0)).toBe(-1);
    thread.weights.set(2, f32Parts(-1));
    expect(weightsAt(thread, job(), seg, 0)).toBe(-1);
    thread.weights.set(2, f32Parts(4096));
    expect(weightsAt(thread, job(), seg, 2)).toBe(4096 + 2 * K * 4);
  });
});
