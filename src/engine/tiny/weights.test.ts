import { describe, expect, it } from "vitest";
import { Rng } from "../tensor/random.js";
import { nearestRivalGap, tensorSeed, unitCode } from "./weights.js";

describe("tensorSeed", () => {
  it("is FNV-1a of seed/name", () => {
    // Values from an independent FNV-1a (32-bit) over the UTF-8 bytes.
    expect(tensorSeed(0, "model.norm.weight")).toBe(2404868555);
    expect(tensorSeed(7, "lm_head.weight")).toBe(2592023683);
  });
});

describe("unitCode", () => {
  it("has unit norm and follows the generator's seed", () => {
    const a = unitCode(new Rng(3), 64);
    const norm = Math.sqrt(a.reduce((s, x) => s + x * x, 0));
    expect(norm).toBeCloseTo(1, 6);
    expect(unitCode(new Rng(3), 64)).toEqual(a);
    expect(unitCode(new Rng(4), 64)).not.toEqual(a);
  });
});

describe("nearestRivalGap", () => {
  it("is a neighbour's gap when the frequencies are low (llama retrieval's RoPE)", () => {
    const invFreq = Array.from({ length: 16 }, (_, f) => 1 / 10000 ** ((2 * f) / 32));
    const gap = nearestRivalGap(invFreq, 16384);
    const neighbour = invFreq.reduce((sum, w) => sum + 1 - Math.cos(w), 0);
    expect(gap).toBeCloseTo(neighbour, 12);
    expect(gap).toBeGreaterThan(0.5);
  });

  it("looks only at distances below maxDistance", () => {
    // One pair at ω = π/2 comes back to a zero gap at distance 4.
    const invFreq = [Math.PI / 2];
    expect(nearestRivalGap(invFreq, 4)).toBeCloseTo(1, 12);
    expect(nearestRivalGap(invFreq, 5)).toBeCloseTo(0, 12);
  });
});
