import { describe, expect, it } from "vitest";
import { bf16ToFloat32, float32ToBf16 } from "./bf16.js";
import { BFLOAT16, decodeMinifloat, encodeMinifloat } from "./minifloat.js";

describe("bf16 fast path", () => {
  it("rounds every float32 next to every bf16 rounding boundary as the generic encoder does", () => {
    const offsets = [0, 1, 0x7fff, 0x8000, 0x8001, 0xffff];
    const bits = new Uint32Array(65536 * offsets.length);
    for (let code = 0; code < 65536; code += 1) {
      offsets.forEach((offset, k) => {
        bits[code * offsets.length + k] = ((code << 16) | offset) >>> 0;
      });
    }
    const values = new Float32Array(bits.buffer);
    const fast = float32ToBf16(values);
    for (let i = 0; i < values.length; i += 1) {
      const v = values[i] as number;
      const got = fast[i] as number;
      if (Number.isNaN(v)) {
        expect(Number.isNaN(decodeMinifloat(BFLOAT16, got))).toBe(true);
        expect(got >> 15).toBe((bits[i] as number) >>> 31);
        continue;
      }
      const want = encodeMinifloat(BFLOAT16, v);
      if (got !== want) expect({ i, got }).toEqual({ i, got: want });
    }
  });

  it("widens every bf16 code exactly", () => {
    const codes = new Uint16Array(65536).map((_, i) => i);
    const wide = bf16ToFloat32(codes);
    for (let code = 0; code < 65536; code += 1) {
      const want = decodeMinifloat(BFLOAT16, code);
      const got = wide[code] as number;
      if (!(Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want)))) expect(got).toBe(want);
    }
  });
});
