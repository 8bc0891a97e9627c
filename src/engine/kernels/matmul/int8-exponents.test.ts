import { describe, expect, it } from "vitest";
import { wasmArena } from "../wasm-arena.js";
import {
  int8ExponentBytes,
  int8ExponentStride,
  int8ExponentsAt,
  int8ExponentsFit,
  layInt8Exponents,
} from "./int8-exponents.js";

describe("the integer MXFP4 path's exponents by block (int8-exponents.ts)", () => {
  it("lays e - 1 of row n, block b at b·stride + n, zeros between", () => {
    const [rows, cols] = [3, 64];
    // Row n, block b: exponent 100 + 10n + b.
    const mxScales = Uint8Array.from([100, 101, 110, 111, 120, 121]);
    const bytes = new Uint8Array(int8ExponentBytes(rows, cols) + 2).fill(7);
    layInt8Exponents(mxScales, rows, cols, bytes.buffer, 1);
    const want = [7, ...new Array(128).fill(0), 7];
    want.splice(1, 3, 99, 109, 119);
    want.splice(65, 3, 100, 110, 120);
    expect(Array.from(bytes)).toEqual(want);
  });

  it("strides an odd number of cache lines, at least 3 bytes past the last row", () => {
    for (const rows of [1, 4, 61, 62, 64, 1024, 2048, 2880]) {
      const stride = int8ExponentStride(rows);
      expect(stride % 64).toBe(0);
      expect((stride / 64) % 2).toBe(1);
      expect(stride).toBeGreaterThanOrEqual(rows + 3);
      expect(stride).toBeLessThan(rows + 3 + 128);
    }
  });

  it("gives the half scale's f32 bits, (e - 1) << 23 = 2^(e - 128), only for e in [2, 254]", () => {
    const f = new Float32Array(1);
    const bits = new Uint32Array(f.buffer);
    for (let e = 2; e <= 254; e++) {
      bits[0] = (e - 1) << 23;
      expect(f[0]).toBe(2 ** (e - 128));
    }
    expect(int8ExponentsFit(Uint8Array.from([2, 127, 254]))).toBe(true);
    for (const odd of [0, 1, 255]) expect(int8ExponentsFit(Uint8Array.from([127, odd]))).toBe(false);
  });

  it("places the layout in the arena once per exponents' array, or none for a weight it cannot hold", () => {
    const arena = wasmArena();
    if (arena === null) throw new Error("no shared WebAssembly memory");
    const mxScales = Uint8Array.from({ length: 8 }, (_, i) => 120 + i);
    const at = int8ExponentsAt(mxScales, 4, 64, arena);
    const laid = new Uint8Array(arena.memory.buffer, at, 128);
    expect(Array.from(laid.subarray(0, 5))).toEqual([119, 121, 123, 125, 0]);
    expect(Array.from(laid.subarray(64, 69))).toEqual([120, 122, 124, 126, 0]);
    expect(int8ExponentsAt(mxScales, 4, 64, arena)).toBe(at);
    expect(int8ExponentsAt(mxScales.slice(), 4, 64, arena)).not.toBe(at);
    expect(int8ExponentsAt(Uint8Array.from([120, 255]), 1, 64, arena)).toBe(-1);
  });
});
