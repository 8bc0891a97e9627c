import { describe, expect, it } from "vitest";
import { StepScratch, stepArray, stepArrayToFill } from "./step-scratch.js";

describe("StepScratch", () => {
  it("hands a replayed step the buffers its shape recorded, in order, zeroed", () => {
    const scratch = new StepScratch();
    scratch.begin();
    const a = stepArray({ scratch }, Float32Array, 4);
    const b = stepArray({ scratch }, Int32Array, 3);
    a.fill(7);
    b.fill(-1);
    scratch.begin();
    const a2 = stepArray({ scratch }, Float32Array, 4);
    const b2 = stepArray({ scratch }, Int32Array, 3);
    expect(a2).toBe(a);
    expect(b2).toBe(b);
    expect([...a2, ...b2]).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(scratch.counts).toEqual({ replayed: 2, replanned: 2 });
  });

  it("replans only the entry whose kind or length changed, and keeps the new one", () => {
    const scratch = new StepScratch();
    scratch.begin();
    const first = stepArray({ scratch }, Float32Array, 4);
    const second = stepArray({ scratch }, Float64Array, 2);
    scratch.begin();
    expect(stepArray({ scratch }, Float32Array, 4)).toBe(first);
    const grown = stepArray({ scratch }, Float64Array, 5);
    expect(grown).not.toBe(second);
    expect(grown).toHaveLength(5);
    scratch.begin();
    stepArray({ scratch }, Float32Array, 4);
    expect(stepArray({ scratch }, Float64Array, 5)).toBe(grown);
    // A Float32Array of the same length is another kind: a new buffer.
    scratch.begin();
    expect(stepArray({ scratch }, Float64Array, 4)).not.toBe(first);
    expect(scratch.counts).toEqual({ replayed: 3, replanned: 4 });
  });

  it("hands a buffer to fill as the last step left it, and a new one zeroed", () => {
    const scratch = new StepScratch();
    scratch.begin();
    const a = stepArrayToFill({ scratch }, Float32Array, 3);
    expect([...a]).toEqual([0, 0, 0]);
    a.fill(5);
    scratch.begin();
    expect(stepArrayToFill({ scratch }, Float32Array, 3)).toBe(a);
    expect([...a]).toEqual([5, 5, 5]);
    expect(stepArrayToFill({}, Float32Array, 2)).toEqual(new Float32Array(2));
  });

  it("allocates a new array each time without a scratch (an unplanned step)", () => {
    const a = stepArray({}, Float32Array, 3);
    const b = stepArray({}, Float32Array, 3);
    expect(a).not.toBe(b);
    expect(a).toEqual(new Float32Array(3));
  });

  it("records at most maxBytes: a buffer past them is handed out fresh, the others replayed", () => {
    const scratch = new StepScratch(undefined, 32);
    scratch.begin();
    const small = stepArray({ scratch }, Float32Array, 4);
    const large = stepArray({ scratch }, Float32Array, 8);
    const last = stepArray({ scratch }, Float64Array, 2);
    scratch.begin();
    expect(stepArray({ scratch }, Float32Array, 4)).toBe(small);
    expect(stepArray({ scratch }, Float32Array, 8)).not.toBe(large);
    expect(stepArray({ scratch }, Float64Array, 2)).toBe(last);
  });
});
