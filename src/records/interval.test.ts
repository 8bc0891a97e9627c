import { describe, expect, it } from "vitest";
import { abVerdict, showsNoDifference, verdictWords } from "./interval.js";

describe("showsNoDifference", () => {
  it("is true exactly when the interval holds 1", () => {
    expect(showsNoDifference([0.678, 1.701])).toBe(true);
    expect(showsNoDifference([1, 1.2])).toBe(true);
    expect(showsNoDifference([1.02, 1.3])).toBe(false);
    expect(showsNoDifference([0.7, 0.98])).toBe(false);
  });
});

describe("abVerdict", () => {
  it("calls a ratio noisy when its interval excludes 1 but spans more than 1.25x", () => {
    // Two back-to-back runs of one A/B on one machine.
    expect(abVerdict([0.82, 1.26])).toBe("no-difference");
    expect(abVerdict([1.001, 1.573])).toBe("noisy");
    expect(abVerdict([1.2, 1.4])).toBe("shown");
    expect(verdictWords([1.001, 1.573])).toBe("noisy (95% interval spans 1.57x, over 1.25x): ");
    expect(verdictWords([0.82, 1.26])).toBe("no difference was shown: ");
    expect(verdictWords([1.2, 1.4])).toBe("");
  });
});
