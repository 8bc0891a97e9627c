import { describe, expect, it } from "vitest";
import { studentT975 } from "./student-t.js";

describe("studentT975", () => {
  it("gives Student's t quantiles close to the table", () => {
    expect(studentT975(1)).toBeCloseTo(12.706, 3);
    expect(studentT975(3)).toBeCloseTo(3.182, 1);
    expect(studentT975(7)).toBeCloseTo(2.365, 2);
    expect(studentT975(30)).toBeCloseTo(2.042, 3);
  });
});
