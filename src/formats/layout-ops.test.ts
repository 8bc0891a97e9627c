import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { regroupGateUp, splitFirstAxis, stackFirstAxis, swapNibbles, transposeLast2 } from "./layout-ops.js";

const shapes = fc.tuple(
  fc.integer({ min: 1, max: 3 }),
  fc.integer({ min: 1, max: 4 }),
  fc.integer({ min: 1, max: 5 }),
  fc.integer({ min: 1, max: 3 }),
);

describe("lossless re-layouts", () => {
  it("transpose puts element (r, c) at (c, r) and twice is the identity", () => {
    const bytes = Uint8Array.from({ length: 2 * 3 * 2 }, (_, i) => i);
    const t = transposeLast2(bytes, [2, 3], 2);
    expect(t.shape).toEqual([3, 2]);
    // element (0, 1) = bytes 2,3 goes to (1, 0) = position 2 of 6 elements
    expect(Array.from(t.bytes.subarray(4, 6))).toEqual([2, 3]);
    fc.assert(
      fc.property(shapes, ([a, r, c, size]) => {
        const data = Uint8Array.from({ length: a * r * c * size }, (_, i) => (i * 31) & 255);
        const once = transposeLast2(data, [a, r, c], size);
        const twice = transposeLast2(once.bytes, once.shape, size);
        return twice.shape.join() === [a, r, c].join() && Buffer.from(twice.bytes).equals(Buffer.from(data));
      }),
    );
  });

  it("nibble swap exchanges halves and is its own inverse on every byte", () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const swapped = swapNibbles(all);
    expect(swapped[0x12]).toBe(0x21);
    expect(Array.from(swapNibbles(swapped))).toEqual(Array.from(all));
  });

  it("gate/up: interleaved rows become halves and back, bit-identical", () => {
    // rows g0 u0 g1 u1 of 2 bytes each
    const rows = Uint8Array.from([1, 1, 9, 9, 2, 2, 8, 8]);
    expect(Array.from(regroupGateUp(rows, [4, 2], 0, 1, false))).toEqual([1, 1, 2, 2, 9, 9, 8, 8]);
    fc.assert(
      fc.property(shapes, fc.integer({ min: 0, max: 2 }), ([a, r, c, size], axis) => {
        const shape = [a * 2, r * 2, c * 2];
        const data = Uint8Array.from(
          { length: shape.reduce((x, y) => x * y) * size },
          (_, i) => (i * 7) & 255,
        );
        const concatenated = regroupGateUp(data, shape, axis, size, false);
        return Buffer.from(regroupGateUp(concatenated, shape, axis, size, true)).equals(Buffer.from(data));
      }),
    );
    expect(() => regroupGateUp(rows, [3, 2], 0, 1, false)).toThrow(/even dimension/);
  });

  it("experts split and stack back to the same bytes", () => {
    const data = Uint8Array.from({ length: 3 * 4 }, (_, i) => i);
    const parts = splitFirstAxis(data, [3, 2, 2]);
    expect(parts.map((p) => p.shape)).toEqual([
      [2, 2],
      [2, 2],
      [2, 2],
    ]);
    const back = stackFirstAxis(parts);
    expect(back.shape).toEqual([3, 2, 2]);
    expect(Array.from(back.bytes)).toEqual(Array.from(data));
    expect(() =>
      stackFirstAxis([
        { bytes: new Uint8Array(2), shape: [2] },
        { bytes: new Uint8Array(3), shape: [3] },
      ]),
    ).toThrow(/share one shape/);
  });
});
