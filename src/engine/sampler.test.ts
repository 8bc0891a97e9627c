import { describe, expect, it } from "vitest";
import {
  adjustLogits,
  argmax,
  logprobsOf,
  orderByLogit,
  SeededStream,
  sampleFrom,
  sampleToken,
  tokenProbabilities,
  validateSampling,
} from "./sampler.js";
import { Rng } from "./tensor/random.js";

const logits = new Float32Array([0.1, 2.0, -1, 1.9, 0.5]);

describe("sampler", () => {
  it("greedy, top_k 1 and a tiny top_p all pick the argmax", () => {
    const rng = new Rng(1);
    expect(sampleToken(logits, 0, 5, { temperature: 0 }, rng)).toBe(1);
    expect(sampleToken(logits, 0, 5, { topK: 1 }, rng)).toBe(1);
    expect(sampleToken(logits, 0, 5, { topP: 0.01 }, rng)).toBe(1);
    expect(argmax(new Float32Array([3, 3]), 0, 2)).toBe(0);
  });

  it("never leaves the top-k set and follows the seed", () => {
    const a = new Rng(9);
    const b = new Rng(9);
    for (let i = 0; i < 200; i++) {
      const t = sampleToken(logits, 0, 5, { temperature: 2, topK: 2 }, a);
      expect([1, 3]).toContain(t);
      expect(sampleToken(logits, 0, 5, { temperature: 2, topK: 2 }, b)).toBe(t);
    }
  });

  it("orders ids by descending logit, lower id first among equals, as a comparator sort does", () => {
    const rng = new Rng(3);
    // Few distinct values (ties), both signs, both zeros and the infinities.
    const values = [
      -3.5,
      -1,
      -0,
      0,
      0.25,
      2,
      1e30,
      -1e-30,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
    ];
    const x = new Float32Array(3 + 500);
    for (let i = 0; i < x.length; i++) x[i] = values[Math.floor(rng.next() * values.length)] as number;
    const expected = Array.from({ length: 500 }, (_, i) => i).sort(
      (a, b) => (x[3 + b] as number) - (x[3 + a] as number) || a - b,
    );
    expect(Array.from(orderByLogit(x, 3, 500))).toEqual(expected);
  });

  it("reports the chosen token's logprob, its rank and the top alternatives in order", () => {
    const lp = logprobsOf(logits, 0, 5, 3, 3, new Float64Array(5));
    const lse = Math.log(Array.from(logits).reduce((s, v) => s + Math.exp(v), 0));
    expect(lp.logprob).toBeCloseTo(1.9 - lse, 6);
    expect(lp.rank).toBe(2);
    expect(lp.top.map((t) => t.tokenId)).toEqual([1, 3, 4]);
  });

  it("rejects bad parameters naming the field", () => {
    expect(() => validateSampling({ temperature: -1 })).toThrow(
      expect.objectContaining({ subject: "temperature" }),
    );
    expect(() => validateSampling({ topK: 1.5 })).toThrow(expect.objectContaining({ subject: "top_k" }));
    expect(() => validateSampling({ seed: 0.5 })).toThrow(expect.objectContaining({ subject: "seed" }));
  });
});

describe("vLLM's logits processors", () => {
  it("applies bans, bias, allowed ids, bad words and the three penalties as vLLM does", () => {
    const row = new Float32Array([2, -1, 0.5, 1, 3]);
    const history = { promptTokenIds: [1], outputTokenIds: [3, 3, 2] };
    const out = adjustLogits(
      row,
      0,
      5,
      { repetitionPenalty: 2, frequencyPenalty: 0.5, presencePenalty: 0.25 },
      history,
    );
    // Repetition: positive divided, negative multiplied (prompt and output); then frequency x count + presence.
    expect(Array.from(out)).toEqual([2, -2, 0.25 - 0.5 - 0.25, 0.5 - 1 - 0.25, 3]);
    expect(row[1]).toBe(-1); // the raw row is untouched
    const masked = adjustLogits(
      row,
      0,
      5,
      { allowedTokenIds: [0, 4], badWords: [[2, 4]], logitBias: new Map([[0, 5]]) },
      { promptTokenIds: [], outputTokenIds: [2], banned: new Set([1]) },
    );
    expect(Array.from(masked)).toEqual([7, -Infinity, -Infinity, -Infinity, -Infinity]);
  });

  it("is greedy below a temperature of 1e-5 and keeps every bit of a 64-bit seed", () => {
    expect(sampleToken(logits, 0, 5, { temperature: 1e-310 }, new SeededStream(1))).toBe(1);
    const draws = (seed: bigint) => {
      const s = new SeededStream(seed);
      return [s.next(), s.next()];
    };
    expect(draws(2n ** 63n + 1n)).not.toEqual(draws(1n));
    expect(draws(2n ** 63n + 1n)).toEqual(draws(2n ** 63n + 1n));
  });

  it("keeps only tokens within min_p of the most likely", () => {
    for (let i = 0; i < 50; i++) {
      const t = sampleToken(logits, 0, 5, { temperature: 1, minP: 0.8 }, new SeededStream(i));
      expect([1, 3]).toContain(t);
    }
  });

  it("tokenProbabilities is the distribution sampleToken draws from, penalties and filters included", () => {
    // A uniform grid of N draws gives each token its probability's share of the grid, to within 1/N.
    const N = 20_000;
    const grid = (sample: (u: { next(): number }) => number) => {
      const counts = new Array(8).fill(0);
      for (let i = 0; i < N; i++) counts[sample({ next: () => (i + 0.5) / N })]++;
      return counts.map((c) => c / N);
    };
    const row = new Float32Array([0.3, 2.0, -1, 1.9, 0.5, 1.2, -0.4, 0.8]);
    const history = { promptTokenIds: [5], outputTokenIds: [1, 1] };
    for (const params of [
      { temperature: 0.7 },
      { temperature: 1.3, topK: 4 },
      { topP: 0.8, minP: 0.1 },
      { temperature: 0.9, repetitionPenalty: 1.5, frequencyPenalty: 0.4 },
    ]) {
      const p = tokenProbabilities(row, 0, 8, params, history);
      expect(p.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
      const drawn = grid((u) => sampleToken(row, 0, 8, params, u, history));
      const fromP = grid((u) => sampleFrom(p, u));
      drawn.forEach((share, id) => {
        expect(Math.abs(share - (p[id] as number))).toBeLessThanOrEqual(1 / N);
        expect(Math.abs((fromP[id] as number) - (p[id] as number))).toBeLessThanOrEqual(1 / N);
      });
    }
  });
});
