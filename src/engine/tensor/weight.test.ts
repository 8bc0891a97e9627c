import { describe, expect, it } from "vitest";
import { bringupErrorOf } from "../../../test/helpers/port-reference.js";
import { checkWeight, type Weight } from "./weight.js";

describe("checkWeight", () => {
  it("takes FP8 codes in lanes order only in rows of whole groups of 16", () => {
    const fp8 = (cols: number): Weight => ({
      dtype: "fp8_e4m3",
      rows: 2,
      cols,
      data: new Uint8Array(2 * cols),
      fp8Order: "lanes",
    });
    expect(() => checkWeight(fp8(32), "w")).not.toThrow();
    const error = bringupErrorOf(() => checkWeight(fp8(24), "w"));
    expect(error.code).toBe("WEIGHT_SHAPE");
    expect(error.message).toContain("multiple of 16");
  });

  it("takes FP8 codes in quads order only in whole groups of four rows and 32 columns", () => {
    const fp8 = (rows: number, cols: number): Weight => ({
      dtype: "fp8_e4m3",
      rows,
      cols,
      data: new Uint8Array(rows * cols),
      fp8Order: "quads",
    });
    expect(() => checkWeight(fp8(8, 64), "w")).not.toThrow();
    for (const [rows, cols] of [
      [6, 64],
      [8, 48],
    ] as const)
      expect(bringupErrorOf(() => checkWeight(fp8(rows, cols), "w")).code).toBe("WEIGHT_SHAPE");
  });
});
