import { describe, expect, it } from "vitest";
import { showsNoDifference } from "./interval.js";

describe("showsNoDifference", () => {
  it("is true exactly when the interval holds 1", () => {
    expect(showsNoDifference([0.678, 1.701])).toBe(true);
    expect(showsNoDifference([1, 1.2])).toBe(true);
    expect(showsNoDifference([1.02, 1.3])).toBe(false);
    expect(showsNoDifference([0.7, 0.98])).toBe(false);
  });
});
