import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeMinifloat, FP4_E2M1, FP8_E4M3FN } from "./minifloat.js";
import { SIMD_SHIFT_MAX, SIMD_SHIFT_MIN, SimdArena } from "./mxfp4-fp8-simd.js";
import { mxfp4ToFp8Block32, mxfp4ToFp8Tile128, nibbleCodes, shiftedE4m3 } from "./mxfp4-to-fp8.js";

// Both kernels: with the plain swizzle, and with relaxed SIMD's, which the converter prefers.
describe.each([false, true])("the SIMD MXFP4 to FP8 kernel, relaxed swizzle %s", (relaxed) => {
  const arena = SimdArena.create(nibbleCodes, relaxed) as SimdArena;

  /** The same bytes twice: once in the arena (the SIMD path runs), once in plain memory (the plain path). */
  function both(bytes: Uint8Array): [Uint8Array, Uint8Array] {
    const inArena = arena.alloc(bytes.length);
    inArena.set(bytes);
    return [inArena, bytes.slice()];
  }

  function compareTile128(
    blocks: Uint8Array,
    scales: Uint8Array,
    rows: number,
    cols: number,
    allowInexact: boolean,
  ) {
    const [simdBlocks, plainBlocks] = both(blocks);
    const [simdScales, plainScales] = both(scales);
    const elements = arena.alloc(rows * cols);
    expect([simdBlocks, simdScales, elements].every((a) => arena.owns(a))).toBe(true);
    elements.fill(0xaa); // stale bytes, as in a recycled region: the kernel must write every element
    const simd = mxfp4ToFp8Tile128(
      simdBlocks,
      simdScales,
      rows,
      cols,
      allowInexact,
      "w",
      0,
      {
        elements,
        scaleInv: new Float32Array(Math.ceil(rows / 128) * Math.ceil(cols / 128)),
      },
      arena,
    );
    const plain = mxfp4ToFp8Tile128(plainBlocks, plainScales, rows, cols, allowInexact, "w");
    expect(Buffer.from(simd.elements).equals(Buffer.from(plain.elements))).toBe(true);
    expect(Array.from(simd.scaleInv)).toEqual(Array.from(plain.scaleInv));
    expect(simd.inexactTiles).toEqual(plain.inexactTiles);
    expect([simd.maxAbsError, simd.maxRelError]).toEqual([plain.maxAbsError, plain.maxRelError]);
    for (const region of [simdBlocks, simdScales, elements]) arena.release(region);
    return plain;
  }

  it("compiles on this Node, so the SIMD path is what the tests below run", () => {
    expect(arena).toBeInstanceOf(SimdArena);
    expect(arena.relaxed).toBe(relaxed); // Node 20 has relaxed SIMD behind a flag the runtime sets
  });

  it("holds, for every shift it covers, the plain path's code for every nibble", () => {
    for (let d = SIMD_SHIFT_MIN; d <= SIMD_SHIFT_MAX; d += 1) {
      const table = arena.view(arena.table(d), 16);
      for (let nibble = 0; nibble < 16; nibble += 1) {
        const code = shiftedE4m3(nibble, d);
        expect(table[nibble]).toBe(code < 0 ? 0x7f : code);
        const value = decodeMinifloat(FP4_E2M1, nibble) * 2 ** d;
        if (code >= 0) expect(decodeMinifloat(FP8_E4M3FN, code)).toBe(value);
      }
    }
  });

  it("per-32 layout: every packed byte gives the plain path's two codes, low nibble first", () => {
    const blocks = Uint8Array.from({ length: 512 }, (_, i) => (i * 7) & 255); // every byte, twice
    const scales = new Uint8Array(32).fill(127);
    const [simdBlocks] = both(blocks);
    const out = arena.alloc(1024);
    out.fill(0xaa);
    mxfp4ToFp8Block32(simdBlocks, scales, "w", out, arena);
    expect(Buffer.from(out).equals(Buffer.from(mxfp4ToFp8Block32(blocks, scales, "w")))).toBe(true);
    arena.release(simdBlocks);
    arena.release(out);
  });

  it("tiles: every packed byte at every shift from far below the tables' range to the top one", () => {
    // Rows of one block each, so one 128-row tile: row 0 holds 6s at scale kA (its top element
    // sets m = kA + 2 - 127 - 8, shift 6); rows 1-16 hold all 256 bytes at kA + d - 6, shift d.
    const blocks = new Uint8Array(17 * 16);
    blocks.fill(0x77, 0, 16);
    for (let b = 0; b < 256; b += 1) blocks[16 + b] = b;
    for (let d = -20; d <= 6; d += 1) {
      const scales = Uint8Array.from({ length: 17 }, (_, r) => (r === 0 ? 140 : 140 + d - 6));
      for (const allowInexact of [false, true]) {
        const plain = compareTile128(blocks, scales, 17, 32, allowInexact);
        expect(plain.inexactTiles.length > 0).toBe(d < -8); // below -8, 0.5 falls under E4M3's subnormals
      }
    }
  });

  it("tiles: agrees with the plain path on random matrices, edge tiles, zero blocks and wide spans", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 0, max: 30 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer(),
        fc.boolean(),
        (rows, groups, span, zeros, seed, allowInexact) => {
          let x = seed >>> 0;
          const next = () => {
            x = (Math.imul(x, 1103515245) + 12345) >>> 0;
            return x >>> 8;
          };
          const scales = Uint8Array.from({ length: rows * groups }, () => 100 + (next() % (span + 1)));
          const blocks = Uint8Array.from({ length: rows * groups * 16 }, () => next() & 255);
          for (let b = 0; b < rows * groups; b += 1)
            if (next() % 1000 < zeros * 1000) blocks.fill(next() % 2 === 0 ? 0 : 0x88, b * 16, b * 16 + 16);
          compareTile128(blocks, scales, rows, groups * 32, allowInexact);
        },
      ),
      { numRuns: 80 },
    );
  });

  it("tiles: scale codes at both ends of E8M0's range, where the kernel's lane sums saturate, agree too", () => {
    const rows = 130;
    const groups = 6;
    let x = 7;
    const next = () => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return x >>> 8;
    };
    const blocks = Uint8Array.from({ length: rows * groups * 16 }, () => next() & 255);
    for (const [low, high] of [
      [245, 254],
      [0, 9],
    ] as const) {
      const scales = Uint8Array.from({ length: rows * groups }, () => low + (next() % (high - low + 1)));
      const plain = compareTile128(blocks, scales, rows, groups * 32, true);
      expect(plain.inexactTiles).toEqual([]);
    }
  });

  it("hands regions back for reuse and keeps them apart while held", () => {
    const a = arena.alloc(1000);
    const b = arena.alloc(1000);
    expect(arena.owns(a) && !arena.owns(new Uint8Array(8))).toBe(true);
    expect(b.byteOffset >= a.byteOffset + 1000 || a.byteOffset >= b.byteOffset + 1000).toBe(true);
    arena.release(a);
    expect(arena.alloc(900).byteOffset).toBe(a.byteOffset);
    arena.release(b);
  });
});
