import { describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { kdaChunked } from "./kda-chunked.js";
import { kdaRecurrent } from "./kda-recurrence.js";
import { type KdaShape, randomKdaInputs, randomKdaState } from "./random-kda-inputs.js";

/** max |a − b| / max |b|: the error relative to the tensor's scale, not to each (possibly tiny) element. */
function normwiseError(a: Float32Array, b: Float32Array): number {
  let diff = 0;
  let scale = 0;
  for (let e = 0; e < a.length; e++) {
    diff = Math.max(diff, Math.abs((a[e] as number) - (b[e] as number)));
    scale = Math.max(scale, Math.abs(b[e] as number));
  }
  return diff / scale;
}

/**
 * Why 2e-6. Both kernels compute in float64, so they differ only by where the state is rounded to float32
 * (every token in the recurrence, every chunk here; each rounding is at most u = 2^-24 ≈ 6e-8 relative)
 * and by float64 reordering (~1e-16, negligible). One token's update S ← (I − β k kᵀ)·diag(e^g)·S + …
 * is non-expansive (β ∈ (0, 1), ‖k‖ = 1, e^g ≤ 1), so rounding errors add up without growing: at most
 * T·u relative to the largest state, 7.6e-6 for T = 128. Measured in two sweeps of 144 and 216 runs
 * (T 16–128, dk 8–64, chunk sizes 4/16/64, gate spreads 1/4/12, zero and carried states): worst
 * 1.73e-7 on the output and 3.34e-7 on the state. 2e-6 keeps about 6× margin over that and stays under
 * the derived ceiling.
 */
const TOLERANCE = 2e-6;

function runBoth(s: KdaShape, chunkSize: number, seed: number, gateInputScale: number, carried: boolean) {
  const rng = new Rng(seed);
  const x = randomKdaInputs(rng, s, gateInputScale);
  const start = carried ? randomKdaState(rng, s) : new Float32Array(s.H * s.dk * s.dv);
  const recurrentState = start.slice();
  const chunkedState = start.slice();
  const recurrentOut = new Float32Array(s.T * s.H * s.dv);
  const chunkedOut = new Float32Array(s.T * s.H * s.dv);
  kdaRecurrent(x.q, x.k, x.v, x.g, x.beta, s.T, s.H, s.dk, s.dv, recurrentState, recurrentOut);
  kdaChunked(x.q, x.k, x.v, x.g, x.beta, s.T, s.H, s.dk, s.dv, chunkedState, chunkedOut, chunkSize);
  return { x, start, recurrentState, chunkedState, recurrentOut, chunkedOut };
}

describe("kdaChunked", () => {
  it("equals the token recurrence within 2e-6 (normwise) across shapes, chunk sizes, decays and states", () => {
    let seed = 1;
    let worst = 0;
    for (const s of [
      { T: 16, H: 2, dk: 8, dv: 8 },
      { T: 37, H: 2, dk: 16, dv: 12 },
      { T: 100, H: 1, dk: 32, dv: 24 },
    ])
      for (const chunkSize of [1, 4, 16, 64])
        for (const gateInputScale of [1, 12])
          for (const carried of [false, true]) {
            const r = runBoth(s, chunkSize, seed++, gateInputScale, carried);
            worst = Math.max(
              worst,
              normwiseError(r.chunkedOut, r.recurrentOut),
              normwiseError(r.chunkedState, r.recurrentState),
            );
          }
    expect(worst).toBeLessThan(TOLERANCE);
    // The comparison must be able to fail: it sees a single-token change of v.
    const r = runBoth({ T: 16, H: 1, dk: 8, dv: 8 }, 4, 99, 1, true);
    const shifted = r.x.v.slice();
    shifted[5 * 8] = (shifted[5 * 8] as number) + 1e-3;
    const state = r.start.slice();
    const out = new Float32Array(16 * 8);
    kdaChunked(r.x.q, r.x.k, shifted, r.x.g, r.x.beta, 16, 1, 8, 8, state, out, 4);
    expect(normwiseError(out, r.recurrentOut)).toBeGreaterThan(TOLERANCE);
  });

  it("holds at the size of a real layer's head: T = 128, dk = dv = 64, chunks of 64", () => {
    const r = runBoth({ T: 128, H: 1, dk: 64, dv: 64 }, 64, 500, 1, true);
    expect(normwiseError(r.chunkedOut, r.recurrentOut)).toBeLessThan(TOLERANCE);
    expect(normwiseError(r.chunkedState, r.recurrentState)).toBeLessThan(TOLERANCE);
  });

  it("gives the same bits when the sequence is split at chunk boundaries", () => {
    const s: KdaShape = { T: 24, H: 2, dk: 6, dv: 5 };
    const r = runBoth(s, 8, 7, 2, true);
    const state = r.start.slice();
    const out = new Float32Array(r.chunkedOut.length);
    const perKey = s.H * s.dk;
    const perValue = s.H * s.dv;
    for (const [from, to] of [
      [0, 8],
      [8, 24],
    ] as const) {
      const piece = new Float32Array((to - from) * perValue);
      kdaChunked(
        r.x.q.subarray(from * perKey, to * perKey),
        r.x.k.subarray(from * perKey, to * perKey),
        r.x.v.subarray(from * perValue, to * perValue),
        r.x.g.subarray(from * perKey, to * perKey),
        r.x.beta.subarray(from * s.H, to * s.H),
        to - from,
        s.H,
        s.dk,
        s.dv,
        state,
        piece,
        8,
      );
      out.set(piece, from * perValue);
    }
    expect(out).toEqual(r.chunkedOut);
    expect(state).toEqual(r.chunkedState);
  });
});
