import { describe, expect, it } from "vitest";
import { isBringupError } from "../../../common/errors.js";
import { Rng } from "../../tensor/random.js";
import { shortConv } from "./short-conv.js";

/** The definition over a whole sequence from zeros: a causal conv1d with padding K−1, per channel. */
function directConv(x: Float32Array, weight: Float32Array, T: number, C: number, K: number, silu: boolean) {
  const out = new Float32Array(T * C);
  for (let c = 0; c < C; c++) {
    const padded = [
      ...new Array<number>(K - 1).fill(0),
      ...Array.from({ length: T }, (_, t) => x[t * C + c] as number),
    ];
    for (let t = 0; t < T; t++) {
      let y = 0;
      for (let j = 0; j < K; j++) y += (weight[c * K + j] as number) * (padded[t + j] as number);
      out[t * C + c] = silu ? y * (1 / (1 + Math.exp(-y))) : y;
    }
  }
  return out;
}

function runInPieces(
  x: Float32Array,
  weight: Float32Array,
  T: number,
  C: number,
  K: number,
  cuts: number[],
  silu: boolean,
) {
  const tail = new Float32Array(C * (K - 1));
  const out = new Float32Array(T * C);
  const bounds = [0, ...cuts, T];
  for (let n = 0; n + 1 < bounds.length; n++) {
    const [from, to] = [bounds[n] as number, bounds[n + 1] as number];
    const piece = new Float32Array((to - from) * C);
    shortConv(x.subarray(from * C, to * C), weight, tail, to - from, C, K, piece, silu);
    out.set(piece, from * C);
  }
  return { out, tail };
}

describe("shortConv", () => {
  it("weights the newest input with w[c, K−1] and the oldest with w[c, 0]", () => {
    // one channel, K = 3, tail [a, b] then x [c]: y = w0·a + w1·b + w2·c
    const tail = Float32Array.of(1, 2);
    const out = new Float32Array(1);
    shortConv(Float32Array.of(3), Float32Array.of(100, 10, 1), tail, 1, 1, 3, out, false);
    expect(out[0]).toBe(100 * 1 + 10 * 2 + 1 * 3);
    expect(Array.from(tail)).toEqual([2, 3]);
  });

  it("applies SiLU after the sum when asked", () => {
    const out = new Float32Array(2);
    shortConv(Float32Array.of(-1.5, 2), Float32Array.of(1, 1), new Float32Array(0), 1, 2, 1, out, true);
    expect(Array.from(out)).toEqual(
      [-1.5 * (1 / (1 + Math.exp(1.5))), 2 * (1 / (1 + Math.exp(-2)))].map(Math.fround),
    );
  });

  it("equals the direct definition from a zero tail, and leaves the last K−1 inputs (zero-padded) in the tail", () => {
    const rng = new Rng(11);
    for (const K of [1, 2, 4, 5])
      for (const T of [1, 2, 3, 7])
        for (const silu of [false, true]) {
          const C = 6;
          const x = rng.fillNormal(new Float32Array(T * C), 1);
          const weight = rng.fillNormal(new Float32Array(C * K), 0.5);
          const { out, tail } = runInPieces(x, weight, T, C, K, [], silu);
          expect(out).toEqual(directConv(x, weight, T, C, K, silu));
          for (let c = 0; c < C; c++)
            for (let m = 0; m < K - 1; m++) {
              const t = T - (K - 1) + m;
              expect(tail[c * (K - 1) + m]).toBe(t < 0 ? 0 : x[t * C + c]);
            }
        }
  });

  it("gives the same bits when the sequence is split at any point, or fed one token at a time", () => {
    const rng = new Rng(12);
    for (const K of [1, 2, 4])
      for (const silu of [false, true]) {
        const T = 9;
        const C = 5;
        const x = rng.fillNormal(new Float32Array(T * C), 1);
        const weight = rng.fillNormal(new Float32Array(C * K), 0.5);
        const whole = runInPieces(x, weight, T, C, K, [], silu);
        for (let cut = 1; cut < T; cut++) {
          const split = runInPieces(x, weight, T, C, K, [cut], silu);
          expect(split.out).toEqual(whole.out);
          expect(split.tail).toEqual(whole.tail);
        }
        const everyToken = runInPieces(x, weight, T, C, K, [1, 2, 3, 4, 5, 6, 7, 8], silu);
        expect(everyToken.out).toEqual(whole.out);
        expect(everyToken.tail).toEqual(whole.tail);
      }
  });

  it("rejects a tail that does not hold K−1 inputs per channel", () => {
    try {
      shortConv(
        new Float32Array(4),
        new Float32Array(8),
        new Float32Array(4),
        2,
        2,
        4,
        new Float32Array(4),
        false,
      );
      expect.unreachable();
    } catch (error) {
      expect(isBringupError(error) && error.code).toBe("KERNEL_SHAPE");
    }
  });
});
