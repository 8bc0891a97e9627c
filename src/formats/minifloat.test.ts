import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  BFLOAT16,
  codeBits,
  decodeMinifloat,
  encodeMinifloat,
  FLOAT16,
  FP4_E2M1,
  FP8_E4M3FN,
  FP8_E5M2,
  type MinifloatFormat,
  maxFinite,
} from "./minifloat.js";

// Independent decodings: each rebuilds a float32 bit pattern by moving fields, instead of the
// arithmetic formula the codec uses, so a shared mistake is unlikely.
const scratch = new Float32Array(1);
const scratchBits = new Uint32Array(scratch.buffer);
function fromFloat32Bits(bits: number): number {
  scratchBits[0] = bits >>> 0;
  return scratch[0] as number;
}

function rebias(code: number, exponentBits: number, mantissaBits: number, bias: number): number {
  const sign = (code >>> (exponentBits + mantissaBits)) & 1;
  let exponent = (code >>> mantissaBits) & ((1 << exponentBits) - 1);
  let mantissa = code & ((1 << mantissaBits) - 1);
  if (exponent === 0) {
    if (mantissa === 0) return fromFloat32Bits(sign << 31);
    exponent = 1;
    while ((mantissa & (1 << mantissaBits)) === 0) {
      mantissa <<= 1;
      exponent -= 1;
    }
    mantissa &= (1 << mantissaBits) - 1;
  }
  return fromFloat32Bits((sign << 31) | ((exponent - bias + 127) << 23) | (mantissa << (23 - mantissaBits)));
}

function independentF16(code: number): number {
  const exponent = (code >>> 10) & 31;
  if (exponent === 31) return code & 0x3ff ? Number.NaN : code & 0x8000 ? -Infinity : Infinity;
  return rebias(code, 5, 10, 15);
}
const independent: Record<string, (code: number) => number> = {
  f16: independentF16,
  bf16: (code) => fromFloat32Bits(code << 16),
  // E5M2 is the top byte of a float16.
  "fp8-e5m2": (code) => independentF16(code << 8),
  "fp8-e4m3fn": (code) => ((code & 0x7f) === 0x7f ? Number.NaN : rebias(code, 4, 3, 7)),
  // The MX spec's table of E2M1 values.
  "fp4-e2m1": (code) => (code & 8 ? -1 : 1) * ([0, 0.5, 1, 1.5, 2, 3, 4, 6][code & 7] as number),
};

const FORMATS: MinifloatFormat[] = [FLOAT16, BFLOAT16, FP8_E4M3FN, FP8_E5M2, FP4_E2M1];

function codes(format: MinifloatFormat): number[] {
  return Array.from({ length: 2 ** codeBits(format) }, (_, code) => code);
}

describe.each(FORMATS)("$name", (format) => {
  const reference = independent[format.name] as (code: number) => number;

  it("decodes every code point as the independent decoding does", () => {
    for (const code of codes(format)) {
      const got = decodeMinifloat(format, code);
      const want = reference(code);
      if (!Object.is(got, want)) expect({ code, got }).toEqual({ code, got: want });
    }
  });

  it("encodes every non-NaN code's value back to that code", () => {
    for (const code of codes(format)) {
      const value = decodeMinifloat(format, code);
      if (Number.isNaN(value)) {
        expect(Number.isNaN(decodeMinifloat(format, encodeMinifloat(format, value)))).toBe(true);
        continue;
      }
      const back = encodeMinifloat(format, value);
      if (back !== code) expect({ code, back }).toEqual({ code, back: code });
    }
  });

  it("rounds every midpoint between neighbours to the even code, and near-midpoints to the nearer", () => {
    const positive = codes(format)
      .filter((code) => code < 2 ** (codeBits(format) - 1))
      .filter((code) => Number.isFinite(decodeMinifloat(format, code)));
    for (let i = 0; i + 1 < positive.length; i += 1) {
      const lo = positive[i] as number;
      const hi = positive[i + 1] as number;
      const a = decodeMinifloat(format, lo);
      const b = decodeMinifloat(format, hi);
      const mid = (a + b) / 2;
      const even = lo % 2 === 0 ? lo : hi;
      const got = [
        encodeMinifloat(format, mid),
        encodeMinifloat(format, mid - (b - a) / 1024),
        encodeMinifloat(format, mid + (b - a) / 1024),
        encodeMinifloat(format, -mid),
      ];
      const signBit = 2 ** (codeBits(format) - 1);
      expect(got).toEqual([even, lo, hi, even + signBit]);
    }
  });

  it("matches a brute-force nearest-code search on random values within range", () => {
    if (codeBits(format) > 8) return; // 16-bit formats are covered exhaustively by the midpoint test
    const finite = codes(format)
      .map((code) => ({ code, value: decodeMinifloat(format, code) }))
      .filter(({ value }) => Number.isFinite(value) && !Object.is(value, -0));
    const max = maxFinite(format);
    fc.assert(
      fc.property(fc.double({ min: -max, max, noNaN: true }), (v) => {
        let best = finite[0] as { code: number; value: number };
        for (const candidate of finite) {
          const d = Math.abs(candidate.value - v);
          const bestD = Math.abs(best.value - v);
          if (d < bestD || (d === bestD && candidate.code % 2 === 0 && best.code % 2 === 1)) best = candidate;
        }
        const got = decodeMinifloat(format, encodeMinifloat(format, v));
        return got === best.value || (got === 0 && best.value === 0);
      }),
      { numRuns: 20_000 },
    );
  });
});

describe("overflow and special values", () => {
  it("E4M3FN: max 448, NaN at 0x7F/0xFF, no infinity, saturation optional", () => {
    expect(maxFinite(FP8_E4M3FN)).toBe(448);
    expect(encodeMinifloat(FP8_E4M3FN, 448)).toBe(0x7e);
    expect(encodeMinifloat(FP8_E4M3FN, 464)).toBe(0x7e); // tie with the would-be 480 goes to even 448
    expect(encodeMinifloat(FP8_E4M3FN, 465)).toBe(0x7f);
    expect(encodeMinifloat(FP8_E4M3FN, -Infinity)).toBe(0xff);
    expect(encodeMinifloat(FP8_E4M3FN, 1e9, { saturate: true })).toBe(0x7e);
    expect(encodeMinifloat(FP8_E4M3FN, -1e9, { saturate: true })).toBe(0xfe);
    expect(decodeMinifloat(FP8_E4M3FN, 0x01)).toBe(2 ** -9);
  });

  it("E5M2 and f16 overflow to infinity unless saturating", () => {
    expect(maxFinite(FP8_E5M2)).toBe(57344);
    expect(encodeMinifloat(FP8_E5M2, 61440)).toBe(0x7c);
    expect(encodeMinifloat(FP8_E5M2, 61440, { saturate: true })).toBe(0x7b);
    expect(maxFinite(FLOAT16)).toBe(65504);
    expect(encodeMinifloat(FLOAT16, 65519.99)).toBe(0x7bff);
    expect(encodeMinifloat(FLOAT16, 65520)).toBe(0x7c00);
  });

  it("E2M1 saturates at 6 and rejects NaN", () => {
    expect(maxFinite(FP4_E2M1)).toBe(6);
    expect(encodeMinifloat(FP4_E2M1, 100)).toBe(7);
    expect(encodeMinifloat(FP4_E2M1, -Infinity)).toBe(15);
    expect(() => encodeMinifloat(FP4_E2M1, Number.NaN)).toThrow(/no NaN/);
  });
});
