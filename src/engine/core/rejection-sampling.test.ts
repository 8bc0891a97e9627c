import { describe, expect, it } from "vitest";
import { SeededStream } from "../sampler.js";
import { verifyDraft } from "./rejection-sampling.js";

/**
 * The chi-square statistic's 1 - 1e-6 quantile for 5 degrees of freedom: a correct rule fails a
 * test at this threshold once in a million seeds (these seeds are fixed, so the run is repeatable).
 */
const CHI2_5DF_1E6 = 35.89;

/** Emits tokens by the rule, drafts drawn from q, and returns Pearson's chi-square against p. */
function chiSquare(
  p: number[],
  q: number[],
  draws: number,
  seed: bigint,
): { chi2: number; accepted: number } {
  const P = Float64Array.from(p);
  const Q = Float64Array.from(q);
  const rng = new SeededStream(seed);
  const counts = new Array(p.length).fill(0);
  let accepted = 0;
  for (let i = 0; i < draws; i++) {
    let u = rng.next();
    let draft = 0;
    while (draft < q.length - 1 && u >= (q[draft] as number)) u -= q[draft++] as number;
    const out = verifyDraft(P, Q, draft, rng);
    counts[out.token]++;
    if (out.accepted) accepted++;
  }
  const chi2 = p.reduce((s, pi, i) => s + (counts[i] - draws * pi) ** 2 / (draws * pi), 0);
  return { chi2, accepted };
}

describe("verifyDraft", () => {
  const p = [0.4, 0.25, 0.15, 0.1, 0.06, 0.04];

  it("emits tokens distributed as the target, whatever the draft distribution", () => {
    for (const [q, seed] of [
      [[0.05, 0.05, 0.1, 0.2, 0.3, 0.3], 1n],
      [[1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6], 2n],
      [[0.4, 0.25, 0.15, 0.1, 0.06, 0.04], 3n],
      [[0.9, 0.1, 0, 0, 0, 0], 4n],
    ] as const) {
      const { chi2 } = chiSquare(p, [...q], 40_000, seed);
      expect(chi2).toBeLessThan(CHI2_5DF_1E6);
    }
  });

  it("accepts at the rate sum(min(p, q)) and always when q equals p", () => {
    const q = [0.05, 0.05, 0.1, 0.2, 0.3, 0.3];
    const rate = p.reduce((s, pi, i) => s + Math.min(pi, q[i] as number), 0);
    const n = 40_000;
    const { accepted } = chiSquare(p, q, n, 5n);
    // Binomial standard deviation sqrt(n r (1 - r)) ≈ 99; 5 sigma fails about once in 1.7 million.
    expect(Math.abs(accepted - n * rate)).toBeLessThan(5 * Math.sqrt(n * rate * (1 - rate)));
    expect(chiSquare(p, p, 1000, 6n).accepted).toBe(1000);
  });
});
