import { describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { sharedArray } from "../../tensor/weight.js";
import { wasmArena } from "../wasm-arena.js";
import { addInto, addIntoPlain, WeightedSum } from "./vector-ops.js";

/** Values of every scale, with infinities and signed zeros among them. */
function values(rng: Rng, n: number, into: Float32Array = new Float32Array(n)): Float32Array {
  const special = [0, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 3.4e38, -1e-40];
  for (let i = 0; i < n; i++)
    into[i] = i % 17 === 5 ? (special[i % special.length] as number) : rng.normal() * 10 ** ((i % 13) - 6);
  return into;
}

const bits = (a: Float32Array | Float64Array) =>
  Array.from(a, (v) => (Number.isNaN(v) ? "NaN" : Object.is(v, -0) ? "-0" : v.toString(16)));

describe("vector ops", () => {
  it("runs in the shared memory here (else this test checks the plain loops against themselves)", () => {
    expect(wasmArena()).not.toBeNull();
  });

  for (const n of [1, 2, 3, 4, 7, 1024, 1031]) {
    it(`addInto gives the plain loop's bits at ${n} values, in the shared memory and out of it`, () => {
      const rng = new Rng(n);
      const src = values(rng, n, sharedArray(Float32Array, n));
      const dst = values(rng, n, sharedArray(Float32Array, n));
      const expected = dst.slice();
      addIntoPlain(expected, src.slice());
      const plain = dst.slice();
      addInto(plain, src.slice());
      addInto(dst, src);
      expect(bits(dst)).toEqual(bits(expected));
      expect(bits(plain)).toEqual(bits(expected));
    });

    it(`WeightedSum gives the plain f64 sums' bits at ${n} values, in the shared memory and out of it`, () => {
      const rng = new Rng(100 + n);
      const rows = Array.from({ length: 5 }, () => values(rng, n + 3, sharedArray(Float32Array, n + 3)));
      const weights = rows.map(() => rng.normal());
      const out = values(rng, n + 2, sharedArray(Float32Array, n + 2));
      const expectedSums = new Float64Array(n);
      rows.forEach((row, r) => {
        for (let i = 0; i < n; i++)
          expectedSums[i] = (expectedSums[i] as number) + (weights[r] as number) * (row[1 + i] as number);
      });
      const expectedOut = out.slice();
      for (let i = 0; i < n; i++)
        expectedOut[2 + i] = (expectedOut[2 + i] as number) + (expectedSums[i] as number);
      for (const shared of [true, false]) {
        const sum = new WeightedSum(n);
        sum.clear();
        for (const [r, row] of rows.entries()) sum.add(weights[r] as number, shared ? row : row.slice(), 1);
        expect(bits(sum.sums)).toEqual(bits(expectedSums));
        const target = shared ? sharedArray(Float32Array, n + 2) : new Float32Array(n + 2);
        target.set(out);
        sum.addTo(target, 2);
        expect(bits(target)).toEqual(bits(expectedOut));
      }
    });
  }
});
