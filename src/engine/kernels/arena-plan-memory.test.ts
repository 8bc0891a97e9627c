import { describe, expect, it } from "vitest";
import { arenaPlanMemory } from "./arena-plan-memory.js";
import { wasmArena } from "./wasm-arena.js";

describe("arenaPlanMemory", () => {
  it("gives arrays in the shared memory up to its byte budget, and none without an arena", () => {
    const arena = wasmArena();
    if (arena === null) throw new Error("WebAssembly SIMD unavailable");
    const memory = arenaPlanMemory(arena, 4096);
    const a = memory.float32(768) as Float32Array;
    expect(arena.offsetOf(a)).toBeGreaterThanOrEqual(0);
    expect(memory.float32(257)).toBeUndefined();
    expect(memory.float32(256)).toBeInstanceOf(Float32Array);
    expect(arenaPlanMemory(null, 4096).float32(1)).toBeUndefined();
  });
});
