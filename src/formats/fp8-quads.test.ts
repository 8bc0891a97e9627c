import { describe, expect, it } from "vitest";
import { fromLanesInPlace } from "./fp8-lanes.js";
import { interleaveRows, quadsIndex, quadsToLanesInPlace, toQuadsInPlace } from "./fp8-quads.js";

describe("FP8 quads order", () => {
  it("re-lays [8, 64] codes in place so that quadsIndex finds each, a permutation", () => {
    const [rows, cols] = [8, 64];
    const codes = Uint8Array.from({ length: rows * cols }, (_, i) => (i * 37 + 5) & 255);
    const quads = toQuadsInPlace(codes.slice(), cols);
    const seen = new Set<number>();
    for (let i = 0; i < codes.length; i++) {
      expect(quads[quadsIndex(i, cols)]).toBe(codes[i]);
      seen.add(quadsIndex(i, cols));
    }
    expect(seen.size).toBe(codes.length);
    // Codes not aligned to 32-bit words (moved byte by byte) end the same.
    const unaligned = new Uint8Array(codes.length + 1).subarray(1);
    unaligned.set(codes);
    expect(toQuadsInPlace(unaligned, cols)).toEqual(quads);
    expect(fromLanesInPlace(quadsToLanesInPlace(quads, cols))).toEqual(codes);
  });

  it("puts a group's four rows block by block, each row's 32 codes in lanes order", () => {
    const cols = 64;
    const codes = Uint8Array.from({ length: 4 * cols }, (_, i) => i & 255);
    const quads = interleaveRows(codes.slice(), cols);
    // Block 1 of row 2: bytes 128 + 64 on, row 2's codes 32-63 as they were.
    expect([...quads.subarray(192, 224)]).toEqual([...codes.subarray(2 * cols + 32, 2 * cols + 64)]);
    // From file order: the first 16 bytes are row 0's codes 0-15 in lanes order.
    expect(fromLanesInPlace(toQuadsInPlace(codes.slice(), cols).subarray(0, 16))).toEqual(
      codes.subarray(0, 16),
    );
  });
});
