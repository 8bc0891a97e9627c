import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { MatmulPool } from "../pool.js";
import { clampedSwiglu } from "./clamped-swiglu.js";
import { expF32 } from "./clamped-swiglu-f32.js";

/** The values' bits, NaNs as one. */
function bits(a: Float32Array): number[] {
  const u = new Uint32Array(a.buffer, a.byteOffset, a.length);
  return Array.from(a, (v, i) => (Number.isNaN(v) ? -1 : (u[i] as number)));
}

/** gate_up [1, 2I]: gates from `gate()`, linear halves over ±12, special values first. */
function gateUps(rng: Rng, I: number, gate: () => number): Float32Array {
  const gu = new Float32Array(2 * I);
  for (let i = 0; i < I; i++) {
    gu[2 * i] = gate();
    gu[2 * i + 1] = (rng.next() - 0.5) * 24;
  }
  const specials = [Number.NaN, Infinity, -Infinity, 0, -0, 1, -1, 2 ** -30, -(2 ** -30), 7, 7.5, -7.5, -60];
  specials.forEach((v, i) => {
    gu[2 * i] = v;
    gu[2 * i + 1] = specials[specials.length - 1 - i] as number;
  });
  return gu;
}

describe("clamped SwiGLU in f32 (the integer MXFP4 path's)", () => {
  const pool = new MatmulPool(1, { simd: true });
  afterAll(() => pool.close());
  const rng = new Rng(29);
  const I = 20004;
  const gates: (() => number)[] = [
    () => (rng.next() - 0.5) * 20,
    () => (rng.next() - 0.8) * 1200,
    () => (rng.next() - 0.5) * 2 ** (rng.next() * 90 - 70),
  ];

  it("has exp within 2 ulp of Math.exp over [-80, 88], infinity above, NaN for NaN", () => {
    let worst = 0;
    for (let i = 0; i <= 100000; i++) {
      const x = Math.fround(-80 + (168 * i) / 100000);
      const want = Math.exp(x);
      const ulp = 2 ** (Math.floor(Math.log2(want)) - 23);
      worst = Math.max(worst, Math.abs(expF32(x) - want) / ulp);
    }
    expect(worst).toBeLessThanOrEqual(2);
    expect([expF32(88.5), expF32(Infinity), expF32(-Infinity)]).toEqual([Infinity, Infinity, expF32(-80)]);
    expect(expF32(Number.NaN)).toBeNaN();
  });

  it("gives its plain reference's bits with SIMD, in place and staged, on several gate ranges", () => {
    for (const gate of gates) {
      const gu = gateUps(rng, I, gate);
      const fast = new Float32Array(I);
      pool.clampedSwiglu(gu, 1, I, 7, 1.702, fast, "f32");
      expect(bits(fast)).toEqual(bits(clampedSwiglu(gu, 1, I, 7, 1.702, undefined, "f32")));
    }
    const memory = pool.planMemory(3 * 2048 * 4);
    const gu = memory.float32(2 * 2048) as Float32Array;
    const out = memory.float32(2048) as Float32Array;
    gu.set(gateUps(rng, 2048, gates[0] as () => number));
    pool.clampedSwiglu(gu, 2, 1024, 7, 1.702, out, "f32");
    expect(bits(out)).toEqual(bits(clampedSwiglu(gu, 2, 1024, 7, 1.702, undefined, "f32")));
  });

  // Rounding x = -alpha · glu to f32 moves exp(x) by up to |x| · 2^-24 of itself; the rest is a few
  // roundings more. Where exp(x) overflows f32 (x > 88) the f64 form's output is below 2^-110.
  it("stays within (|alpha · glu| + 8) · 2^-23 of the f64 form relative to its size, or 2^-110", () => {
    let worst = 0;
    for (const gate of gates) {
      const gu = gateUps(rng, I, gate);
      const exact = clampedSwiglu(gu, 1, I, 7, 1.702);
      const got = clampedSwiglu(gu, 1, I, 7, 1.702, undefined, "f32");
      for (let i = 0; i < I; i++) {
        const [e, g] = [exact[i] as number, got[i] as number];
        if (Number.isNaN(e)) {
          expect(g).toBeNaN();
          continue;
        }
        const glu = Math.min(gu[2 * i] as number, 7);
        const allowed = Math.abs(e) * (Math.abs(1.702 * glu) + 8) * 2 ** -23 + 2 ** -110;
        worst = Math.max(worst, Math.abs(g - e) / allowed);
      }
    }
    expect(worst).toBeLessThanOrEqual(1);
  });
});
