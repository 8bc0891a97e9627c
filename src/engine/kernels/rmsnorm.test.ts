import { describe, expect, it } from "vitest";
import { Rng } from "../tensor/random.js";
import { sharedArray } from "../tensor/weight.js";
import { rmsNorm, rmsNormPlain } from "./rmsnorm.js";
import { wasmArena } from "./wasm-arena.js";

/** Values of every scale, with infinities, signed zeros and a subnormal among them. */
function values(rng: Rng, n: number, into: Float32Array): Float32Array {
  const special = [0, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 3.4e38, -1e-40];
  for (let i = 0; i < n; i++)
    into[i] = i % 61 === 7 ? (special[i % special.length] as number) : rng.normal() * 10 ** ((i % 13) - 6);
  return into;
}

const bits = (a: Float32Array) =>
  Array.from(a, (v) => (Number.isNaN(v) ? "NaN" : Object.is(v, -0) ? "-0" : v.toString(16)));

describe("rmsNorm", () => {
  it("runs in the shared memory here (else this test checks the plain loops against themselves)", () => {
    expect(wasmArena()).not.toBeNull();
  });

  // Row counts around the kernel's groups of four; odd dims take its scalar tail.
  for (const [rows, dim] of [
    [1, 768],
    [2, 5],
    [3, 64],
    [4, 1],
    [5, 33],
    [7, 768],
    [16, 768],
    [17, 130],
  ] as const) {
    it(`gives the plain loops' bits at ${rows} rows of ${dim}, into another array and in place`, () => {
      const rng = new Rng(rows * 1000 + dim);
      const x = values(rng, rows * dim, sharedArray(Float32Array, rows * dim));
      const weight = values(rng, dim, sharedArray(Float32Array, dim));
      // Rows of one huge value (the sum overflows) and of zeros (eps alone) as well as ordinary ones.
      if (rows > 2) x.fill(3e38, dim, 2 * dim).fill(0, 2 * dim, 3 * dim);
      const expected = new Float32Array(rows * dim);
      rmsNormPlain(x, rows, dim, weight, 1e-6, expected);
      const out = sharedArray(Float32Array, rows * dim);
      rmsNorm(x, rows, dim, weight, 1e-6, out);
      expect(bits(out)).toEqual(bits(expected));
      rmsNorm(x, rows, dim, weight, 1e-6);
      expect(bits(x)).toEqual(bits(expected));
    });
  }

  it("falls back to the plain loops for arrays outside the shared memory", () => {
    const rng = new Rng(9);
    const x = values(rng, 3 * 10, new Float32Array(30));
    const weight = values(rng, 10, new Float32Array(10));
    const expected = x.slice();
    rmsNormPlain(expected, 3, 10, weight, 1e-5);
    rmsNorm(x, 3, 10, weight, 1e-5);
    expect(bits(x)).toEqual(bits(expected));
  });
});
