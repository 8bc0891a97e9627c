import { describe, expect, it } from "vitest";
import { wasmArena } from "../wasm-arena.js";
import { int8ExponentBytes, int8ExponentsAt, int8ExponentsFit, layInt8Exponents } from "./int8-exponents.js";

describe("the integer MXFP4 path's exponents by block (int8-exponents.ts)", () => {
  it("lays e - 1 of row n, block b at b·rows + n, then three zero bytes", () => {
    const [rows, cols] = [3, 64];
    // Row n, block b: exponent 100 + 10n + b.
    const mxScales = Uint8Array.from([100, 101, 110, 111, 120, 121]);
    const bytes = new Uint8Array(int8ExponentBytes(rows, cols) + 2).fill(7);
    layInt8Exponents(mxScales, rows, cols, bytes.buffer, 1);
    expect(Array.from(bytes)).toEqual([7, 99, 109, 119, 100, 110, 120, 0, 0, 0, 7]);
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

  it("places the layout in the arena, or none for a weight it cannot hold", () => {
    const arena = wasmArena();
    if (arena === null) throw new Error("no shared WebAssembly memory");
    const mxScales = Uint8Array.from({ length: 8 }, (_, i) => 120 + i);
    const at = int8ExponentsAt(mxScales, 4, 64, arena);
    expect(Array.from(new Uint8Array(arena.memory.buffer, at, 11))).toEqual([
      119, 121, 123, 125, 120, 122, 124, 126, 0, 0, 0,
    ]);
    expect(int8ExponentsAt(Uint8Array.from([120, 255]), 1, 64, arena)).toBe(-1);
  });
});
