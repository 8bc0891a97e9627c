import { describe, expect, it } from "vitest";
import { hasFp8NanCode } from "./fp8-nan-codes.js";

describe("hasFp8NanCode", () => {
  it("finds 0x7f and 0xff at every position and offset, and nothing else", () => {
    const buffer = new Uint8Array(64);
    for (let offset = 0; offset < 4; offset++)
      for (let length = 0; length <= 13; length++) {
        const codes = buffer.subarray(offset, offset + length);
        // Every other code but NaN's, the bytes around 0x7f and 0xff among them.
        for (let i = 0; i < length; i++) codes[i] = [0x7e, 0x80, 0xfe, 0x00, 0x3f][i % 5] as number;
        expect(hasFp8NanCode(codes)).toBe(false);
        for (let at = 0; at < length; at++)
          for (const nan of [0x7f, 0xff]) {
            const kept = codes[at] as number;
            codes[at] = nan;
            expect(hasFp8NanCode(codes)).toBe(true);
            codes[at] = kept;
          }
      }
  });

  it("sees every byte value but NaN's as a number", () => {
    const codes = Uint8Array.from({ length: 256 }, (_, b) => b).filter((b) => (b & 0x7f) !== 0x7f);
    expect(hasFp8NanCode(codes)).toBe(false);
  });
});
