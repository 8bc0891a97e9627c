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
});
