import { describe, expect, it } from "vitest";
import { isBringupError } from "../../../common/errors.js";
import { Rng } from "../../tensor/random.js";
import { softplus } from "../activations.js";
import { kdaGate, l2NormalizeHeads } from "./kda-gate.js";
import { kdaRecurrent, kdaRecurrentFused } from "./kda-recurrence.js";
import { type KdaShape, randomKdaInputs, randomKdaState } from "./random-kda-inputs.js";

type Kernel = typeof kdaRecurrent;

function run(kernel: Kernel, x: ReturnType<typeof randomKdaInputs>, s: KdaShape, state: Float32Array) {
  const out = new Float32Array(s.T * s.H * s.dv);
  kernel(x.q, x.k, x.v, x.g, x.beta, s.T, s.H, s.dk, s.dv, state, out);
  return out;
}

/** Tokens [from, to) of a [T, H, width] tensor. */
function tokens(a: Float32Array, from: number, to: number, perToken: number): Float32Array {
  return a.subarray(from * perToken, to * perToken);
}

const shapes: KdaShape[] = [];
for (const T of [1, 2, 5, 9])
  for (const H of [1, 3])
    for (const [dk, dv] of [
      [1, 1],
      [2, 3],
      [5, 2],
      [8, 8],
      [16, 12],
    ] as const)
      shapes.push({ T, H, dk, dv });

describe("kdaRecurrent", () => {
  it("matches the equations written out by hand for one channel", () => {
    // dk = dv = 1: S' = S·e^g; S'' = S' + k·β(v − k·S'); o = q·S''.
    const [q, k, v, g, beta, s0] = [0.5, 1, 2, -0.25, 0.75, 3];
    const state = new Float32Array([s0]);
    const out = new Float32Array(1);
    kdaRecurrent(
      Float32Array.of(q),
      Float32Array.of(k),
      Float32Array.of(v),
      Float32Array.of(g),
      Float32Array.of(beta),
      1,
      1,
      1,
      1,
      state,
      out,
    );
    const decayed = s0 * Math.exp(g);
    const updated = decayed + k * beta * (v - k * decayed);
    expect(state[0]).toBe(Math.fround(updated));
    expect(out[0]).toBe(Math.fround(q * updated));
  });

  it("with β = 1 and no decay, a key written once reads its value back exactly (the delta rule)", () => {
    const rng = new Rng(3);
    const dk = 8;
    const dv = 5;
    const k = rng.fillNormal(new Float32Array(dk), 1);
    l2NormalizeHeads(k, 1, dk);
    const v = rng.fillNormal(new Float32Array(dv), 1);
    const state = rng.fillNormal(new Float32Array(dk * dv), 1);
    const out = new Float32Array(dv);
    // q = k (unscaled) reads kᵀS' = kᵀS + (kᵀk)(v − kᵀS) = v, since kᵀk = 1 up to rounding.
    kdaRecurrent(k, k, v, new Float32Array(dk), Float32Array.of(1), 1, 1, dk, dv, state, out);
    for (let j = 0; j < dv; j++) expect(out[j]).toBeCloseTo(v[j] as number, 5);
  });

  it("with β = 0 only decays: row i of S scales by exp(g_i) and nothing is written", () => {
    const rng = new Rng(4);
    const s: KdaShape = { T: 1, H: 2, dk: 3, dv: 4 };
    const x = randomKdaInputs(rng, s);
    x.beta.fill(0);
    const state = randomKdaState(rng, s);
    const before = state.slice();
    run(kdaRecurrent, x, s, state);
    for (let h = 0; h < s.H; h++)
      for (let i = 0; i < s.dk; i++)
        for (let j = 0; j < s.dv; j++) {
          const e = (h * s.dk + i) * s.dv + j;
          const decay = Math.exp(x.g[h * s.dk + i] as number);
          expect(state[e]).toBe(Math.fround((before[e] as number) * decay));
        }
  });

  it("reads each head's own state: heads do not mix", () => {
    const rng = new Rng(5);
    const s: KdaShape = { T: 4, H: 3, dk: 4, dv: 4 };
    const x = randomKdaInputs(rng, s);
    const state = randomKdaState(rng, s);
    const all = run(kdaRecurrent, x, s, state.slice());
    for (let h = 0; h < s.H; h++) {
      const pick = (a: Float32Array, w: number) =>
        Float32Array.from(
          { length: s.T * w },
          (_, n) => a[(Math.floor(n / w) * s.H + h) * w + (n % w)] as number,
        );
      const one: KdaShape = { ...s, H: 1 };
      const headInputs = {
        q: pick(x.q, s.dk),
        k: pick(x.k, s.dk),
        v: pick(x.v, s.dv),
        g: pick(x.g, s.dk),
        beta: pick(x.beta, 1),
      };
      const headOut = run(kdaRecurrent, headInputs, one, state.slice(h * s.dk * s.dv, (h + 1) * s.dk * s.dv));
      expect(headOut).toEqual(pick(all, s.dv));
    }
  });

  it("rejects a tensor whose length does not fit its layout", () => {
    const s: KdaShape = { T: 2, H: 1, dk: 2, dv: 2 };
    const x = randomKdaInputs(new Rng(1), s);
    try {
      kdaRecurrent(x.q, x.k, x.v, x.g, x.beta, 2, 1, 2, 2, new Float32Array(3), new Float32Array(4));
      expect.unreachable();
    } catch (error) {
      expect(isBringupError(error) && error.code).toBe("KERNEL_SHAPE");
    }
  });
});

describe("kdaRecurrentFused", () => {
  it("equals kdaRecurrent bit for bit over many shapes and seeds, from zero and from a carried state", () => {
    let seed = 100;
    for (const s of shapes) {
      for (const fromZero of [true, false]) {
        const rng = new Rng(seed++);
        const x = randomKdaInputs(rng, s, 3);
        const start = fromZero ? new Float32Array(s.H * s.dk * s.dv) : randomKdaState(rng, s);
        const refState = start.slice();
        const fusedState = start.slice();
        const refOut = run(kdaRecurrent, x, s, refState);
        const fusedOut = run(kdaRecurrentFused, x, s, fusedState);
        expect(fusedOut).toEqual(refOut);
        expect(fusedState).toEqual(refState);
      }
    }
  });

  it("decoding one token per call from the carried state equals one call over all tokens, bit for bit", () => {
    for (const kernel of [kdaRecurrent, kdaRecurrentFused]) {
      const s: KdaShape = { T: 7, H: 2, dk: 6, dv: 5 };
      const rng = new Rng(42);
      const x = randomKdaInputs(rng, s, 2);
      const start = randomKdaState(rng, s);
      const wholeState = start.slice();
      const whole = run(kernel, x, s, wholeState);
      // prefill 3 tokens with the reference, then decode the rest one at a time with `kernel`
      const stepState = start.slice();
      const stepped = new Float32Array(whole.length);
      const perKey = s.H * s.dk;
      const perValue = s.H * s.dv;
      const slice = (from: number, to: number) => ({
        q: tokens(x.q, from, to, perKey),
        k: tokens(x.k, from, to, perKey),
        v: tokens(x.v, from, to, perValue),
        g: tokens(x.g, from, to, perKey),
        beta: tokens(x.beta, from, to, s.H),
      });
      stepped.set(run(kdaRecurrent, slice(0, 3), { ...s, T: 3 }, stepState), 0);
      for (let t = 3; t < s.T; t++)
        stepped.set(run(kernel, slice(t, t + 1), { ...s, T: 1 }, stepState), t * perValue);
      expect(stepped).toEqual(whole);
      expect(stepState).toEqual(wholeState);
    }
  });
});

describe("kdaGate", () => {
  it("computes g = −exp(A_log)·softplus(f + dt_bias) per channel and β = sigmoid(b)", () => {
    const f = Float32Array.of(0.5, -1, 30, 2);
    const b = Float32Array.of(0.25, -2);
    const aLog = Float32Array.of(1, 0);
    const dtBias = Float32Array.of(0, 1, -5, 0);
    const g = new Float32Array(4);
    const beta = new Float32Array(2);
    kdaGate(f, b, aLog, dtBias, 1, 2, 2, g, beta);
    expect(Array.from(g)).toEqual(
      [
        -Math.E * Math.log1p(Math.exp(0.5)),
        -Math.E * Math.log1p(Math.exp(0)),
        -1 * 25, // above the threshold 20 softplus is the identity
        -1 * Math.log1p(Math.exp(2)),
      ].map(Math.fround),
    );
    expect(Array.from(beta)).toEqual([1 / (1 + Math.exp(-0.25)), 1 / (1 + Math.exp(2))].map(Math.fround));
    expect(softplus(20)).toBe(Math.log1p(Math.exp(20)));
  });

  it("L2-normalizes each head vector with fla's epsilon and applies the scale", () => {
    const x = Float32Array.of(3, 4, 0, 0);
    l2NormalizeHeads(x, 2, 2, 0.5);
    expect(Array.from(x)).toEqual(
      [3 * (0.5 / Math.sqrt(25 + 1e-6)), 4 * (0.5 / Math.sqrt(25 + 1e-6)), 0, 0].map(Math.fround),
    );
  });
});
