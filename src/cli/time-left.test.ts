import { describe, expect, it } from "vitest";
import { timeLeft } from "./time-left.js";

describe("the time left in a long stage", () => {
  it("is estimated from the pace of the items done, and unsaid before the first and after the last", () => {
    expect(timeLeft(10_000, { done: 2, total: 6 })).toBe(", about 20 s left");
    expect(timeLeft(60_000, { done: 1, total: 4 })).toBe(", about 3 min left");
    expect(timeLeft(5_000, { done: 0, total: 4 })).toBe("");
    expect(timeLeft(5_000, { done: 4, total: 4 })).toBe("");
  });
});
