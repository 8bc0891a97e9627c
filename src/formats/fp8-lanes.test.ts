import { describe, expect, it } from "vitest";
import { fromLanesInPlace, LANES_BYTE_OF, LANES_ORDER, lanesIndex, toLanesInPlace } from "./fp8-lanes.js";

describe("FP8 lanes order", () => {
  it("puts code 4·[0, 2, 1, 3][r] + i in byte 4i + r of each 16, a permutation", () => {
    expect(LANES_ORDER).toEqual([0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15]);
    expect([...LANES_ORDER].sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    for (let k = 0; k < 16; k++) expect(LANES_ORDER[LANES_BYTE_OF[k] as number]).toBe(k);
  });

  it("re-lays codes in place so that lanesIndex finds each, and back", () => {
    const codes = Uint8Array.from({ length: 64 }, (_, i) => (i * 37 + 5) & 255);
    const lanes = toLanesInPlace(codes.slice());
    for (let i = 0; i < codes.length; i++) expect(lanes[lanesIndex(i)]).toBe(codes[i]);
    expect(fromLanesInPlace(lanes)).toEqual(codes);
  });
});
