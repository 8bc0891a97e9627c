import { afterAll, describe, expect, it } from "vitest";
import { toHalves } from "../../../formats/mxfp4-halves.js";
import { addBias } from "../../blocks/attention/gqa-attention.js";
import { Rng } from "../../tensor/random.js";
import { shareArray, type Weight } from "../../tensor/weight.js";
import { MatmulPool } from "../pool.js";
import { wasmArena } from "../wasm-arena.js";
import { type ClampedExpert, int8Experts } from "./int8-experts.js";

const rng = new Rng(17);
const pool = new MatmulPool(1, { mxfp4: "int8" });
afterAll(() => pool.close());

function mxfp4Weight(rows: number, cols: number, halves: boolean): Weight {
  const codes = Uint8Array.from({ length: (rows * cols) / 2 }, () => rng.nextU32() & 255);
  const mxScales = Uint8Array.from({ length: (rows * cols) / 32 }, () => 120 + (rng.nextU32() % 9));
  return {
    dtype: "mxfp4",
    rows,
    cols,
    data: shareArray(halves ? toHalves(codes) : codes),
    mxScales: shareArray(mxScales),
    ...(halves ? { mxfp4Order: "halves" as const } : {}),
  };
}

function expert(H: number, I: number, halves: boolean): ClampedExpert {
  return {
    gateUp: mxfp4Weight(2 * I, H, halves),
    gateUpBias: shareArray(rng.fillNormal(new Float32Array(2 * I), 0.5)),
    down: mxfp4Weight(H, I, halves),
    downBias: shareArray(rng.fillNormal(new Float32Array(H), 0.5)),
  };
}

/** The pool's matmuls, addBias and clamped SwiGLU (in f32, as on the integer path), one expert at a time. */
function oneByOne(h: Float32Array, experts: readonly ClampedExpert[], limit: number): Float32Array {
  const H = h.length;
  const ys = new Float32Array(experts.length * H);
  experts.forEach((e, r) => {
    const I = e.down.cols;
    const gateUp = new Float32Array(2 * I);
    pool.matmul(h, 1, e.gateUp, gateUp);
    addBias(gateUp, e.gateUpBias, 1);
    const act = new Float32Array(I);
    pool.clampedSwiglu(gateUp, 1, I, limit, 1.702, act, "f32");
    const y = ys.subarray(r * H, (r + 1) * H);
    pool.matmul(act, 1, e.down, y);
    addBias(y, e.downBias, 1);
  });
  return ys;
}

const bitsOf = (a: Float32Array) =>
  Array.from(new Uint32Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength)));

describe("Int8Experts (one token's chosen experts in a few WebAssembly calls)", () => {
  const together = int8Experts();
  if (together === null) throw new Error("SIMD unavailable");

  it("gives the bits of the pool's calls, expert by expert, in either code order and row counts", () => {
    // Rows 4 apart and not (the kernel's last group of four overlaps the one before), I of 3 rows.
    for (const [H, I, k, halves] of [
      [64, 96, 3, false],
      [96, 32, 2, true],
      [32, 3 * 32, 1, true],
    ] as const) {
      const experts = Array.from({ length: k }, () => expert(H, I, halves));
      const h = rng.fillNormal(new Float32Array(H), 1);
      for (const limit of [7, 0.5]) {
        const got = together.run(h, experts, limit, 1.702);
        // In the shared memory, where the mix reads it.
        expect(wasmArena()?.offsetOf(got as Float32Array)).toBeGreaterThanOrEqual(0);
        expect(bitsOf(got as Float32Array)).toEqual(bitsOf(oneByOne(h, experts, limit)));
      }
    }
  });

  it("leaves experts it cannot read to the caller: a bias outside the shared memory", () => {
    const e = expert(32, 32, false);
    const h = rng.fillNormal(new Float32Array(32), 1);
    expect(together.run(h, [{ ...e, downBias: new Float32Array(e.downBias) }], 7, 1.702)).toBeNull();
  });
});
