import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeMinifloat, encodeMinifloat, FP4_E2M1 } from "./minifloat.js";
import {
  dequantizeMxfp4,
  dequantizeMxfp4Scalar,
  e2m1MagnitudeCode,
  encodeMxfp4,
  mxfp4LogicalShape,
} from "./mxfp4.js";

const E2M1 = [0, 0.5, 1, 1.5, 2, 3, 4, 6];

const scalar = (blocks: Uint8Array, scales: Uint8Array) => {
  const out = new Float32Array(scales.length * 32);
  dequantizeMxfp4Scalar(blocks, scales, out);
  return out;
};

describe("MXFP4 decoding", () => {
  it.each([
    ["SIMD", dequantizeMxfp4],
    ["scalar", scalar],
  ])("decodes every packed byte under every finite scale as the spec's tables do (%s)", (_, decode) => {
    const scales = new Uint8Array(255).map((_, i) => i);
    const blocks = new Uint8Array(255 * 16);
    // Each scale gets 16 bytes; 16 scales in a row cover all 256 byte values under that scale group.
    const decoded: number[][] = [];
    for (let start = 0; start < 256; start += 16) {
      for (let s = 0; s < 255; s += 1) for (let j = 0; j < 16; j += 1) blocks[s * 16 + j] = start + j;
      decoded.push(Array.from(decode(blocks, scales)));
      for (let s = 0; s < 255; s += 1) {
        for (let j = 0; j < 16; j += 1) {
          const byte = start + j;
          for (const [k, nibble] of [byte & 15, byte >> 4].entries()) {
            const want = Math.fround((nibble & 8 ? -1 : 1) * (E2M1[nibble & 7] as number) * 2 ** (s - 127));
            const got = decoded[decoded.length - 1]?.[s * 32 + 2 * j + k];
            if (!Object.is(got, want)) expect({ s, byte, k, got }).toEqual({ s, byte, k, got: want });
          }
        }
      }
    }
  });

  it("rejects a NaN scale, naming the block", () => {
    const scales = new Uint8Array([127, 255]);
    expect(() => dequantizeMxfp4(new Uint8Array(32), scales, [2, 16], "w_blocks")).toThrow(
      /w_blocks: block 1 has the NaN scale/,
    );
  });

  it("rejects blocks that do not match the scales or shape", () => {
    expect(() => dequantizeMxfp4(new Uint8Array(31), new Uint8Array(2))).toThrow(/do not match/);
    expect(() => dequantizeMxfp4(new Uint8Array(32), new Uint8Array(2), [3, 16])).toThrow(/does not match/);
    expect(() => mxfp4LogicalShape([4, 15])).toThrow(/groups, 16/);
    expect(mxfp4LogicalShape([8, 4, 3, 16])).toEqual([8, 4, 96]);
  });
});

describe("MXFP4 encoding", () => {
  it("rounds magnitudes to E2M1 as the generic ties-to-even encoder does", () => {
    const probes = new Set<number>();
    for (let i = 0; i < E2M1.length; i += 1) {
      const v = E2M1[i] as number;
      const next = E2M1[i + 1] ?? 12;
      for (const p of [v, (v + next) / 2, (v + next) / 2 + 1e-9, (v + next) / 2 - 1e-9]) probes.add(p);
    }
    for (const p of [...probes, 1e30, 7, 6.5]) {
      expect(e2m1MagnitudeCode(p)).toBe(encodeMinifloat(FP4_E2M1, p));
    }
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 20, noNaN: true }),
        (p) => e2m1MagnitudeCode(p) === encodeMinifloat(FP4_E2M1, p),
      ),
    );
  });

  it("picks the spec's scale 2^(floor(log2 amax) - 2) and rounds each element to nearest even", () => {
    fc.assert(
      fc.property(
        fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { minLength: 32, maxLength: 32 }),
        (values) => {
          const { blocks, scales } = encodeMxfp4(values);
          const amax = Math.max(...values.map(Math.abs));
          const shared = amax === 0 ? -127 : Math.max(Math.floor(Math.log2(amax)) - 2, -127);
          // Math.log2 is exact enough away from powers of two; at them, both sides of the floor agree.
          const alt = amax === 0 ? -127 : Math.max(Math.floor(Math.log2(amax) + 1e-12) - 2, -127);
          const scale = (scales[0] as number) - 127;
          if (scale !== shared && scale !== alt) return false;
          if (!(2 ** (scale + 2) <= amax || amax === 0 || scale === -127)) return false;
          return values.every((v, i) => {
            const nibble = ((blocks[i >> 1] as number) >> ((i & 1) * 4)) & 15;
            return nibble === encodeMinifloat(FP4_E2M1, v / 2 ** scale);
          });
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("re-encodes any decoded MXFP4 block to the same values", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        // From scale 253 up, 4 and 6 times the scale overflow float32, so those blocks have no float32 decoding.
        fc.integer({ min: 0, max: 252 }),
        (block, scale) => {
          const values = dequantizeMxfp4(block, new Uint8Array([scale]));
          const again = encodeMxfp4(values);
          const back = dequantizeMxfp4(again.blocks, again.scales);
          return values.every((v, i) => Object.is(v, back[i]));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("gives all-zero blocks the smallest scale and keeps signed zeros", () => {
    const values = new Float32Array(32);
    values[3] = -0;
    const { blocks, scales } = encodeMxfp4(values);
    expect(scales[0]).toBe(0);
    expect(decodeMinifloat(FP4_E2M1, ((blocks[1] as number) >> 4) & 15)).toBe(-0);
  });

  it("refuses NaN, infinity and partial blocks", () => {
    const values = new Float32Array(32);
    values[5] = Number.NaN;
    expect(() => encodeMxfp4(values, "w")).toThrow(/w: element 5 is NaN/);
    expect(() => encodeMxfp4(new Float32Array(33), "w")).toThrow(/multiple of 32/);
  });
});
