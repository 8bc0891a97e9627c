import { describe, expect, it } from "vitest";
import { decodeToFloat32 } from "./decode.js";
import { DTYPES } from "./dtypes.js";
import { decodeMinifloat, FLOAT16, FP8_E4M3FN, FP8_E5M2 } from "./minifloat.js";

function same(a: number, b: number): boolean {
  return Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
}

describe("decodeToFloat32", () => {
  it("decodes every fp8 and f16 code as the codec does, even from unaligned bytes", () => {
    const cases = [
      { dtype: "F8_E4M3", format: FP8_E4M3FN, bytes: 1 },
      { dtype: "F8_E5M2", format: FP8_E5M2, bytes: 1 },
      { dtype: "F16", format: FLOAT16, bytes: 2 },
    ] as const;
    for (const { dtype, format, bytes } of cases) {
      const count = 2 ** (8 * bytes);
      const raw = new Uint8Array(count * bytes + 1);
      const data = raw.subarray(1);
      for (let code = 0; code < count; code += 1) {
        data[code * bytes] = code & 0xff;
        if (bytes === 2) data[code * bytes + 1] = code >> 8;
      }
      const got = decodeToFloat32(dtype, data);
      for (let code = 0; code < count; code += 1) {
        const want = Math.fround(decodeMinifloat(format, code));
        if (!same(got[code] as number, want)) expect({ dtype, code, got: got[code] }).toEqual({ want });
      }
    }
  });

  it("decodes integer and wide dtypes", () => {
    const bytes = new Uint8Array(new BigInt64Array([-3n, 7n]).buffer);
    expect(Array.from(decodeToFloat32("I64", bytes))).toEqual([-3, 7]);
    expect(Array.from(decodeToFloat32("F64", new Uint8Array(new Float64Array([0.1]).buffer)))).toEqual([
      Math.fround(0.1),
    ]);
    expect(Array.from(decodeToFloat32("I8", new Uint8Array([255, 1])))).toEqual([-1, 1]);
    expect(Array.from(decodeToFloat32("F8_E8M0", new Uint8Array([127, 128])))).toEqual([1, 2]);
    expect(Array.from(decodeToFloat32("BF16", new Uint8Array([0x80, 0x3f])))).toEqual([1]);
    for (const dtype of DTYPES) expect(decodeToFloat32(dtype, new Uint8Array(0)).length).toBe(0);
  });

  it("rejects a byte count that is not whole elements", () => {
    expect(() => decodeToFloat32("F32", new Uint8Array(6), "w")).toThrow(/w: 6 bytes/);
  });
});
