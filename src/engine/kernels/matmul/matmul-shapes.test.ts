import { describe, expect, it } from "vitest";
import type { Weight } from "../../tensor/weight.js";
import { matmulShapes } from "./matmul-shapes.js";

const weight = (rows: number, cols: number): Weight => ({
  dtype: "f32",
  rows,
  cols,
  data: new Float32Array(rows * cols),
});

describe("matmulShapes", () => {
  it("gives the shared K and the rows of every weight in all", () => {
    const outs = [new Float32Array(2 * 8), new Float32Array(2 * 4)];
    expect(matmulShapes(new Float32Array(2 * 16), 2, [weight(8, 16), weight(4, 16)], outs)).toEqual({
      K: 16,
      totalRows: 12,
    });
  });

  it("refuses a weight of other columns, a short input or a short output, by ENGINE_SHAPE", () => {
    const x = new Float32Array(2 * 16);
    const out = new Float32Array(2 * 8);
    for (const [input, weights, outs] of [
      [x, [weight(8, 16), weight(8, 12)], [out, out]],
      [x.subarray(1), [weight(8, 16)], [out]],
      [x, [weight(8, 16)], [out.subarray(1)]],
    ] as const) {
      expect(() => matmulShapes(input, 2, weights, outs)).toThrow(
        expect.objectContaining({ code: "ENGINE_SHAPE" }),
      );
    }
  });
});
