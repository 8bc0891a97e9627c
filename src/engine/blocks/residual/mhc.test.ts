import { describe, expect, it } from "vitest";
import { Rng } from "../../tensor/random.js";
import {
  collapseStreams,
  expandStreams,
  type HyperConnectionWeights,
  hyperConnectionWeights,
  hyperHead,
  type MhcConfig,
  replicateToStreams,
  sinkhornProject,
} from "./mhc.js";

const config: MhcConfig = { streams: 4, sinkhornIters: 20, hcEps: 1e-6, normEps: 1e-6 };

function randomSite(rng: Rng, n: number, H: number): HyperConnectionWeights {
  return {
    fn: rng.fillNormal(new Float32Array((2 + n) * n * n * H), 0.3),
    base: rng.fillNormal(new Float32Array((2 + n) * n), 0.5),
    scale: rng.fillNormal(new Float32Array(3), 1),
  };
}

function siteWeights(streams: Float32Array, w: HyperConnectionWeights, c: MhcConfig, T: number, H: number) {
  const n = c.streams;
  const pre = new Float32Array(T * n);
  const post = new Float32Array(T * n);
  const comb = new Float32Array(T * n * n);
  hyperConnectionWeights(streams, w, c, T, H, pre, post, comb);
  return { pre, post, comb };
}

describe("sinkhornProject", () => {
  it("counts iterations as the source does: softmax, a column pass, then iters − 1 (row, column) rounds", () => {
    // Equal logits stay equal, so one entry c follows the scalar map: softmax + eps, then
    // c ← c / (n·c + eps) once per normalization pass (2·iters − 1 passes).
    for (const iters of [1, 2, 20]) {
      const n = 3;
      const eps = 1e-3;
      const m = new Float64Array(n * n).fill(0.7);
      sinkhornProject(m, n, iters, eps);
      let c = 1 / n + eps;
      for (let pass = 0; pass < 2 * iters - 1; pass++) c = c / (n * c + eps);
      for (const value of m) expect(value).toBe(c);
    }
  });

  it("softmaxes rows first: one iteration of a 2×2 by hand", () => {
    const m = Float64Array.of(0, Math.log(3), Math.log(2), 0);
    sinkhornProject(m, 2, 1, 0);
    // softmax rows: [1/4, 3/4], [2/3, 1/3]; column sums 11/12 and 13/12
    const expected = [0.25 / (11 / 12), 0.75 / (13 / 12), 2 / 3 / (11 / 12), 1 / 3 / (13 / 12)];
    m.forEach((value, e) => {
      expect(value).toBeCloseTo(expected[e] as number, 15);
    });
  });

  it("ends close to doubly stochastic after 20 iterations for logits of unit spread", () => {
    // Columns are normalized last, so they sum to 1 − O(eps); rows converge more slowly (with logits
    // of spread 3, 20 iterations leave rows off by up to 0.03, which is the source's behaviour too).
    const rng = new Rng(21);
    for (let trial = 0; trial < 50; trial++) {
      const n = 4;
      const m = Float64Array.from({ length: n * n }, () => rng.normal());
      sinkhornProject(m, n, 20, 1e-6);
      for (let i = 0; i < n; i++) {
        let row = 0;
        let column = 0;
        for (let j = 0; j < n; j++) {
          row += m[i * n + j] as number;
          column += m[j * n + i] as number;
        }
        expect(Math.abs(column - 1)).toBeLessThan(1e-5);
        expect(Math.abs(row - 1)).toBeLessThan(1e-5);
      }
    }
  });
});

describe("hyperConnectionWeights", () => {
  it("with fn = 0 and base = 0: pre = 1/2 + eps, post = 1, comb uniform", () => {
    const H = 3;
    const n = config.streams;
    const w: HyperConnectionWeights = {
      fn: new Float32Array((2 + n) * n * n * H),
      base: new Float32Array((2 + n) * n),
      scale: Float32Array.of(2, 3, 4),
    };
    const streams = new Rng(1).fillNormal(new Float32Array(2 * n * H), 1);
    const { pre, post, comb } = siteWeights(streams, w, config, 2, H);
    expect(Array.from(pre)).toEqual(new Array(2 * n).fill(Math.fround(0.5 + 1e-6)));
    expect(Array.from(post)).toEqual(new Array(2 * n).fill(1));
    const uniform = new Float64Array(n * n);
    sinkhornProject(uniform, n, config.sinkhornIters, config.hcEps);
    expect(Array.from(comb)).toEqual([...uniform, ...uniform].map(Math.fround));
  });

  it("keeps pre in (eps, 1 + eps), post in (0, 2) and comb's columns summing to 1", () => {
    const rng = new Rng(2);
    const H = 5;
    const T = 6;
    const n = config.streams;
    const { pre, post, comb } = siteWeights(
      rng.fillNormal(new Float32Array(T * n * H), 2),
      randomSite(rng, n, H),
      config,
      T,
      H,
    );
    for (const p of pre) expect(p > 1e-6 && p < 1 + 1e-6).toBe(true);
    for (const p of post) expect(p > 0 && p < 2).toBe(true);
    for (let t = 0; t < T; t++)
      for (let k = 0; k < n; k++) {
        let column = 0;
        for (let j = 0; j < n; j++) column += comb[(t * n + j) * n + k] as number;
        expect(column).toBeCloseTo(1, 5);
      }
  });

  it("reads the streams only through their RMS norm: scaling a token's streams changes nothing but rounding", () => {
    const rng = new Rng(3);
    const H = 4;
    const n = config.streams;
    const streams = rng.fillNormal(new Float32Array(n * H), 1);
    const w = randomSite(rng, n, H);
    const a = siteWeights(streams, w, config, 1, H);
    const b = siteWeights(
      streams.map((x) => x * 64),
      w,
      config,
      1,
      H,
    );
    for (const key of ["pre", "post", "comb"] as const)
      b[key].forEach((value, e) => {
        expect(value).toBeCloseTo(a[key][e] as number, 6);
      });
  });
});

describe("collapse and expand", () => {
  it("collapses with Σ_i pre_i X_i", () => {
    const streams = Float32Array.of(1, 2, 10, 20, 100, 200);
    const out = new Float32Array(2);
    collapseStreams(streams, Float32Array.of(0.5, 0.25, 2), 1, 3, 2, out);
    expect(Array.from(out)).toEqual([0.5 + 2.5 + 200, 1 + 5 + 400]);
  });

  it("mixes with combᵀ: new X_k = post_k · out + Σ_j comb[j, k] X_j", () => {
    // comb[0][1] = 1 sends stream 0 to stream 1; the transposed reading would send stream 1 to 0.
    const n = 2;
    const H = 2;
    const streams = Float32Array.of(1, 2, 30, 40);
    const comb = Float32Array.of(0, 1, 0, 0);
    const next = new Float32Array(n * H);
    expandStreams(Float32Array.of(5, 7), streams, Float32Array.of(2, 0.5), comb, 1, n, H, next);
    expect(Array.from(next)).toEqual([2 * 5, 2 * 7, 0.5 * 5 + 1, 0.5 * 7 + 2]);
  });

  it("leaves the streams as they were when comb = I and post = 0", () => {
    const rng = new Rng(4);
    const [T, n, H] = [3, 4, 5];
    const streams = rng.fillNormal(new Float32Array(T * n * H), 1);
    const identity = new Float32Array(T * n * n);
    for (let t = 0; t < T; t++) for (let i = 0; i < n; i++) identity[(t * n + i) * n + i] = 1;
    const next = new Float32Array(T * n * H);
    expandStreams(
      rng.fillNormal(new Float32Array(T * H), 1),
      streams,
      new Float32Array(T * n),
      identity,
      T,
      n,
      H,
      next,
    );
    expect(next).toEqual(streams);
  });

  it("starts from n copies of the embedding", () => {
    const streams = new Float32Array(2 * 3 * 2);
    replicateToStreams(Float32Array.of(1, 2, 3, 4), 2, 3, 2, streams);
    expect(Array.from(streams)).toEqual([1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4]);
  });
});

describe("hyperHead", () => {
  it("with fn = 0 and base = 0 sums the streams with weight 1/2 + eps", () => {
    const [T, H] = [2, 3];
    const n = config.streams;
    const streams = new Rng(5).fillNormal(new Float32Array(T * n * H), 1);
    const out = new Float32Array(T * H);
    hyperHead(
      streams,
      { fn: new Float32Array(n * n * H), base: new Float32Array(n), scale: Float32Array.of(1) },
      config,
      T,
      H,
      out,
    );
    const weight = Math.fround(0.5 + 1e-6);
    for (let t = 0; t < T; t++)
      for (let d = 0; d < H; d++) {
        let sum = 0;
        for (let i = 0; i < n; i++) sum += weight * (streams[(t * n + i) * H + d] as number);
        expect(out[t * H + d]).toBe(Math.fround(sum));
      }
  });
});
