import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import { MatmulPool } from "../pool.js";
import { clampedSwiglu } from "./clamped-swiglu.js";

/** The values' bits, NaNs as one (their payloads are not the kernels' concern). */
function bits(a: Float32Array): number[] {
  const u = new Uint32Array(a.buffer, a.byteOffset, a.length);
  return Array.from(a, (v, i) => (Number.isNaN(v) ? -1 : (u[i] as number)));
}

/** gate_up [1, 2I]: gates from `gate(i)`, linear halves spread over ±12, a few special values first. */
function gateUps(rng: Rng, I: number, gate: (i: number) => number): Float32Array {
  const gu = new Float32Array(2 * I);
  for (let i = 0; i < I; i++) {
    gu[2 * i] = gate(i);
    gu[2 * i + 1] = (rng.next() - 0.5) * 24;
  }
  const specials = [Number.NaN, Infinity, -Infinity, 0, -0, 1, -1, 2 ** -30, -(2 ** -30), 7, 7.5, -7.5];
  specials.forEach((v, i) => {
    gu[2 * i] = v;
    gu[2 * i + 1] = specials[specials.length - 1 - i] as number;
  });
  return gu;
}

describe("clamped SwiGLU with WebAssembly SIMD", () => {
  const pool = new MatmulPool(1, { simd: true });
  const plainPool = new MatmulPool(1, { simd: false });
  afterAll(() => Promise.all([pool.close(), plainPool.close()]));
  const rng = new Rng(28);
  // More values than the pool stages at a time (16384): its slices meet inside.
  const I = 20004;
  /** Gate distributions: gpt-oss's range, far tails past exp's overflow, and many scales. */
  const gates: [string, (i: number) => number][] = [
    ["near zero to the limit", () => (rng.next() - 0.5) * 20],
    ["far negative (exp overflows)", () => (rng.next() - 0.8) * 1200],
    ["every scale", () => (rng.next() - 0.5) * 2 ** (rng.next() * 90 - 70)],
  ];

  it("gives clampedSwiglu's bits (V8's Math.exp, operation for operation) on gpt-oss's constants", () => {
    expect(pool.simd).toBe(true);
    for (const [, gate] of gates) {
      const gu = gateUps(rng, I, gate);
      const fast = new Float32Array(I);
      pool.clampedSwiglu(gu, 1, I, 7, 1.702, fast);
      expect(bits(fast)).toEqual(bits(clampedSwiglu(gu, 1, I, 7, 1.702)));
    }
  });

  it("gives its bits with exp's argument over its whole range: thresholds, subnormal exps, reduction edges", () => {
    // alpha = -1 and no limit: exp's argument is the gate itself.
    const edges = [
      709.78, 709.79, 709.5, -708.3, -708.5, -745.1, -745.2, 0.3465735, 0.3465736, 1.0397207, 1.0397208,
    ];
    const gu = gateUps(rng, I, (i) =>
      i < 3000
        ? (edges[i % edges.length] as number) * (1 + (rng.next() - 0.5) * 2 ** -20)
        : (rng.next() - 0.5) * 1600,
    );
    const fast = new Float32Array(I);
    pool.clampedSwiglu(gu, 1, I, Infinity, -1, fast);
    expect(bits(fast)).toEqual(bits(clampedSwiglu(gu, 1, I, Infinity, -1)));
  });

  it("works in place on a replayed step's arrays in the shared memory, and falls back to the plain kernel", () => {
    const [n, width] = [2, 1024];
    const memory = pool.planMemory(3 * n * width * 4);
    const gu = memory.float32(2 * n * width) as Float32Array;
    const out = memory.float32(n * width) as Float32Array;
    gu.set(gateUps(rng, n * width, gates[0]?.[1] as () => number));
    pool.clampedSwiglu(gu, n, width, 7, 1.702, out);
    expect(bits(out)).toEqual(bits(clampedSwiglu(gu, n, width, 7, 1.702)));
    // Not a multiple of 4 values, and no SIMD at all: the plain kernel's own values.
    const odd = gateUps(rng, 7, () => (rng.next() - 0.5) * 20).subarray(0, 6);
    for (const p of [pool, plainPool]) {
      const got = new Float32Array(3);
      p.clampedSwiglu(odd, 1, 3, 7, 1.702, got);
      expect(bits(got)).toEqual(bits(clampedSwiglu(odd, 1, 3, 7, 1.702)));
    }
  });
});
