import { describe, expect, it } from "vitest";
import { fp8ValuesToMxfp4 } from "./fp8-to-mxfp4.js";
import { dequantizeMxfp4 } from "./mxfp4.js";

const block = (f: (i: number) => number) => Float64Array.from({ length: 32 }, (_, i) => f(i));

describe("fp8ValuesToMxfp4", () => {
  it("keeps a preferred per-block scale when it carries the block, else takes the encoder's", () => {
    // Largest element 1.5 * 2^-3: the encoder picks 2^-5 (it becomes 6); the block's own 2^-3 fits too.
    const values = block((i) => [0, 0.5, -1, 1.5][i % 4] as number).map((v) => v * 2 ** -3);
    const own = fp8ValuesToMxfp4(values, "t", 0, new Float32Array([2 ** -3]));
    expect(own.scales).toEqual(new Uint8Array([124]));
    const encoders = fp8ValuesToMxfp4(values, "t", 0);
    expect(encoders.scales).toEqual(new Uint8Array([122]));
    for (const { blocks, scales } of [own, encoders])
      expect(Array.from(dequantizeMxfp4(blocks, scales))).toEqual(Array.from(values));
    // A preferred scale that is not a power of two, or does not carry the block, gives way.
    expect(fp8ValuesToMxfp4(values, "t", 0, new Float32Array([0.3])).scales).toEqual(new Uint8Array([122]));
    expect(fp8ValuesToMxfp4(values, "t", 0, new Float32Array([2 ** 4])).scales).toEqual(
      new Uint8Array([122]),
    );
  });

  it("keeps the sign of zero and refuses what no scale carries, naming the element", () => {
    const zeros = fp8ValuesToMxfp4(
      block((i) => (i === 3 ? -0 : 0)),
      "t",
      0,
    );
    expect(Object.is(dequantizeMxfp4(zeros.blocks, zeros.scales)[3], -0)).toBe(true);
    expect(() =>
      fp8ValuesToMxfp4(
        block((i) => (i === 5 ? 1.25 : 6)),
        "x#w",
        64,
      ),
    ).toThrow(
      /x#w: element 69 is 1\.25, which no MXFP4 block scale carries.*--to bf16.*no flag keeps this one weight FP8/,
    );
    expect(() =>
      fp8ValuesToMxfp4(
        block((i) => (i === 2 ? Number.NaN : 1)),
        "x#w",
        0,
      ),
    ).toThrow(/element 2 is NaN/);
  });
});
