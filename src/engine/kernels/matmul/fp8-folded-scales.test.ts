import { describe, expect, it } from "vitest";
import { wasmArena } from "../wasm-arena.js";
import { fp8FoldedScalesAt, fp8ScalesFold } from "./fp8-folded-scales.js";

describe("fp8FoldedScalesAt", () => {
  it("copies the scales times 2^120 into the arena once per scales' array", () => {
    const arena = wasmArena();
    if (arena === null) throw new Error("no shared WebAssembly memory");
    // An f32 subnormal, a normal, and the largest that folds.
    const scales = Float32Array.from([2 ** -149, 3.1e-3, 255]);
    const at = fp8FoldedScalesAt(scales, arena);
    expect(Array.from(new Float32Array(arena.memory.buffer, at, 3))).toEqual([
      2 ** -29,
      Math.fround(3.1e-3) * 2 ** 120,
      255 * 2 ** 120,
    ]);
    expect(fp8FoldedScalesAt(scales, arena)).toBe(at);
    expect(fp8FoldedScalesAt(scales.slice(), arena)).not.toBe(at);
  });

  it("makes none where a scale times 2^120 is not a finite f32", () => {
    const arena = wasmArena();
    if (arena === null) throw new Error("no shared WebAssembly memory");
    for (const s of [256, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(fp8ScalesFold(Float32Array.from([1, s]))).toBe(false);
      expect(fp8FoldedScalesAt(Float32Array.from([1, s]), arena)).toBe(-1);
    }
  });
});
