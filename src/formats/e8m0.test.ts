import { describe, expect, it } from "vitest";
import { decodeE8m0, e8m0Table, encodeE8m0Exponent } from "./e8m0.js";

describe("E8M0", () => {
  it("decodes every code as 2^(code-127) by building the float32 bits, NaN at 0xFF", () => {
    const table = e8m0Table();
    const bits = new Uint32Array(1);
    const asFloat = new Float32Array(bits.buffer);
    for (let code = 0; code < 256; code += 1) {
      // Independent: code 0 is the float32 subnormal 2^-127 (bit 22); others are the exponent field itself.
      bits[0] = code === 0 ? 1 << 22 : code << 23;
      const want = code === 255 ? Number.NaN : (asFloat[0] as number);
      expect(decodeE8m0(code)).toBe(want);
      expect(table[code]).toBe(want);
      if (code !== 255) expect(encodeE8m0Exponent(code - 127)).toBe(code);
    }
  });

  it("clamps exponents below the range and marks those above as NaN", () => {
    expect(encodeE8m0Exponent(-200)).toBe(0);
    expect(encodeE8m0Exponent(128)).toBe(255);
  });
});
