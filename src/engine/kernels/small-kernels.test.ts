import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../tensor/random.js";
import { MatmulPool } from "./pool.js";
import { rmsNorm } from "./rmsnorm.js";
import { Rope } from "./rope.js";
import { logSoftmax, softmax } from "./softmax.js";
import { swiglu } from "./swiglu/swiglu.js";

describe("rope", () => {
  it("rotates pairs (i, i+half) by pos·θ^(-2i/d) and leaves the unrotated tail alone (partial rotary)", () => {
    const rope = new Rope(8, 0.5, 100);
    expect(rope.rotaryDim).toBe(4);
    const x = new Float32Array([1, 1, 0, 0, 5, 6, 7, 8]);
    rope.apply(x, 0, 1, 8, 3);
    const a0 = 3;
    const a1 = 3 * 100 ** (-2 / 4);
    expect(x[0]).toBeCloseTo(Math.cos(a0), 6);
    expect(x[2]).toBeCloseTo(Math.sin(a0), 6);
    expect(x[1]).toBeCloseTo(Math.cos(a1), 6);
    expect(x[3]).toBeCloseTo(Math.sin(a1), 6);
    expect(Array.from(x.subarray(4))).toEqual([5, 6, 7, 8]);
  });

  it("applies YaRN: high frequencies kept, low ones divided by the factor, cos/sin scaled by 0.1·ln(s)+1", () => {
    // d=8, base 10000, s=4, original context 16: the correction range is [0, 1], so only i=0 keeps its frequency.
    const yarn = { factor: 4, originalMaxPositionEmbeddings: 16, betaFast: 32, betaSlow: 1 };
    const rope = new Rope(8, 1, 10000, yarn);
    const x = new Float32Array([1, 1, 1, 1, 0, 0, 0, 0]);
    rope.apply(x, 0, 1, 8, 1);
    const scale = 0.1 * Math.log(4) + 1;
    const angles = [1, 10000 ** (-2 / 8) / 4, 10000 ** (-4 / 8) / 4, 10000 ** (-6 / 8) / 4];
    angles.forEach((a, i) => {
      expect(x[i]).toBeCloseTo(Math.cos(a) * scale, 6);
      expect(x[i + 4]).toBeCloseTo(Math.sin(a) * scale, 6);
    });
    // HF's attention_factor, when given, is the cos/sin factor itself.
    const given = new Rope(8, 1, 10000, { ...yarn, attentionFactor: 0.5 });
    const y = new Float32Array([1, 0, 0, 0, 0, 0, 0, 0]);
    given.apply(y, 0, 1, 8, 1);
    expect(y[0]).toBeCloseTo(Math.cos(1) * 0.5, 6);
  });
});

describe("softmax", () => {
  it("adds a sink to the denominator without giving it weight", () => {
    const x = new Float32Array([0, Math.log(2)]);
    softmax(x, 0, 2, 0);
    expect(x[0]).toBeCloseTo(0.25, 7);
    expect(x[1]).toBeCloseTo(0.5, 7);
  });

  it("log-softmax sums to one in probability", () => {
    const out = new Float64Array(3);
    logSoftmax(new Float32Array([1, 2, 3]), 0, 3, out);
    expect(Math.exp(out[0] as number) + Math.exp(out[1] as number) + Math.exp(out[2] as number)).toBeCloseTo(
      1,
      12,
    );
  });
});

describe("rmsnorm and swiglu", () => {
  it("normalizes each row to unit RMS before the weight", () => {
    const x = new Float32Array([3, 4, 0, 0]);
    rmsNorm(x, 1, 4, new Float32Array([1, 2, 1, 1]), 0);
    const rms = Math.sqrt(25 / 4);
    expect(x[0]).toBeCloseTo(3 / rms, 6);
    expect(x[1]).toBeCloseTo((2 * 4) / rms, 6);
  });

  it("computes silu(gate)·up", () => {
    const gate = new Float32Array([0, 2]);
    swiglu(gate, new Float32Array([5, 3]), 2);
    expect(gate[0]).toBe(0);
    expect(gate[1]).toBeCloseTo((2 / (1 + Math.exp(-2))) * 3, 6);
  });
});

describe("swiglu with WebAssembly SIMD", () => {
  const pools = [new MatmulPool(1, { simd: true }), new MatmulPool(2, { simd: true })];
  afterAll(() => Promise.all(pools.map((p) => p.close())));

  it("gives the plain kernel's bits on these inputs (normal, far tails, zeros, infinities, NaN) with a ragged tail, on one thread or split between two", () => {
    const rng = new Rng(11);
    const n = 20003; // enough to be split between threads
    const gate = new Float32Array(n);
    const up = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      gate[i] = (rng.next() - 0.5) * (i % 3 === 0 ? 200 : 12);
      up[i] = (rng.next() - 0.5) * 4;
    }
    gate.set([
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      -800,
      800,
      0,
      -0,
      1e-30,
      -88.5,
      88.5,
    ]);
    up[11] = Number.POSITIVE_INFINITY;
    const plain = gate.slice();
    swiglu(plain, up, n);
    for (const simd of pools) {
      expect(simd.simd).toBe(true);
      // Its exp is within about 1e-14 of the exact value, so the f32 results differ only on rare
      // near-ties; none falls among these inputs. Back to back, so the helper thread, which
      // races the calling one for ranges, is awake to take some.
      for (let i = 0; i < 40; i++) {
        const fast = gate.slice();
        simd.swiglu(fast, up, n);
        expect(Array.from(fast)).toEqual(Array.from(plain));
      }
      // Only the first n values are touched.
      const short = gate.slice();
      simd.swiglu(short, up, 5);
      expect(Array.from(short.subarray(0, 5))).toEqual(Array.from(plain.subarray(0, 5)));
      expect(Array.from(short.subarray(5))).toEqual(Array.from(gate.subarray(5)));
    }
  });
});
