import { describe, expect, it } from "vitest";
import { floatToFp8Tile128 } from "./fp8-blockwise.js";
import { decodeTable, FP8_E4M3FN } from "./minifloat.js";

const E4M3 = decodeTable(FP8_E4M3FN);

/** A seeded uniform generator in [0, 1) (mulberry32), so the cases are the same every run. */
function uniform(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

describe("floatToFp8Tile128", () => {
  it("rounds each value to nearest even against the float32 scale it stores, near ties too", () => {
    // Values placed next to the midpoint m between two neighbouring E4M3 codes, times the tile's
    // stored scale: the exact quotient value / scale lies on m's one side or the other (or on it),
    // which v - m * scale tells exactly (m has 5 significant bits, the scale 24: their product is
    // exact in float64).
    const next = uniform(33);
    let cases = 0;
    let nearTies = 0;
    for (let tile = 0; tile < 4; tile += 1) {
      const amax = Math.fround(1 + next());
      const values = new Float32Array(128 * 128);
      values[0] = amax;
      const scale = Math.fround(amax / 448);
      const expected = new Uint8Array(values.length);
      expected[0] = 0x7e;
      for (let i = 1; i < values.length; i += 1) {
        const low = Math.floor(next() * 0x7d);
        const m = ((E4M3[low] as number) + (E4M3[low + 1] as number)) / 2;
        const negative = next() < 0.5;
        const v = Math.fround(m * scale * (1 + (next() - 0.5) * 2 ** -22));
        values[i] = negative ? -v : v;
        const side = Math.sign(v - m * scale);
        const code = side > 0 ? low + 1 : side < 0 ? low : low % 2 === 0 ? low : low + 1;
        expected[i] = negative ? code | 0x80 : code;
        if (Math.abs(v / scale - m) < m * 2 ** -20) nearTies += 1;
        cases += 1;
      }
      const { elements, scaleInv } = floatToFp8Tile128(values, 128, 128);
      expect(scaleInv[0]).toBe(scale);
      const wrong = expected.reduce((n, code, i) => n + (elements[i] === code ? 0 : 1), 0);
      expect(wrong, `tile ${tile}: values rounded the other way`).toBe(0);
    }
    expect(cases).toBe(4 * (128 * 128 - 1));
    expect(nearTies).toBeGreaterThan(cases / 2); // the cases do test rounding near a tie
  });
});
