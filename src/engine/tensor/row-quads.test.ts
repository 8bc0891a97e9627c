import { describe, expect, it } from "vitest";
import { embed } from "../kernels/embedding.js";
import { weightAt } from "../kernels/reference.js";
import { Rng } from "./random.js";
import { fromRowQuads, inRowQuads, layOutForTile, quadIndex, quadRow, toRowQuads } from "./row-quads.js";
import { shareArray, type Weight } from "./weight.js";

const rng = new Rng(11);
const values = (n: number) => rng.fillNormal(new Float32Array(n), 1);

describe("the row-quads layout", () => {
  for (const rows of [8, 10, 3]) {
    it(`puts every value of a [${rows}, 12] matrix where quadIndex says, ragged rows row-major, and reads it back`, () => {
      const cols = 12;
      const rowMajor = values(rows * cols);
      const quads = rowMajor.slice();
      toRowQuads(quads, rows, cols);
      for (let r = 0; r < rows; r++) {
        for (let k = 0; k < cols; k++)
          expect(quads[quadIndex(r, k, rows, cols)]).toBe(rowMajor[r * cols + k]);
      }
      // A first whole group is interleaved every four values; rows past the whole groups stay put.
      if (rows >= 4)
        expect(Array.from(quads.subarray(0, 8))).toEqual([
          ...rowMajor.subarray(0, 4),
          ...rowMajor.subarray(12, 16),
        ]);
      const ragged = (rows & ~3) * cols;
      expect(Array.from(quads.subarray(ragged))).toEqual(Array.from(rowMajor.subarray(ragged)));
      expect(Array.from(fromRowQuads(quads, rows, cols))).toEqual(Array.from(rowMajor));
      const row = new Float32Array(cols + 2);
      quadRow(quads, 0, rows, cols, rows - 1, row, 2);
      expect(Array.from(row.subarray(2))).toEqual(Array.from(rowMajor.subarray((rows - 1) * cols)));
    });
  }

  it("lays out a stack matrix by matrix, so each matrix's slice is a row-quads matrix", () => {
    const [count, rows, cols] = [3, 6, 8];
    const rowMajor = values(count * rows * cols);
    const quads = rowMajor.slice();
    toRowQuads(quads, rows, cols, count);
    for (let e = 0; e < count; e++) {
      const slice = quads.subarray(e * rows * cols, (e + 1) * rows * cols);
      const want = rowMajor.subarray(e * rows * cols, (e + 1) * rows * cols);
      expect(Array.from(fromRowQuads(slice, rows, cols))).toEqual(Array.from(want));
    }
    expect(Array.from(fromRowQuads(quads, rows, cols, count))).toEqual(Array.from(rowMajor));
  });

  it("lays out only arrays the tile reads in place, with whole groups of four values, each once", () => {
    const rowMajor = values(8 * 8);
    const inArena = shareArray(rowMajor);
    expect(layOutForTile(inArena, 8, 8)).toBe(true);
    expect(inRowQuads(inArena)).toBe(true);
    // A second call (the same tensor read again) does not permute it again.
    expect(layOutForTile(inArena, 8, 8)).toBe(true);
    expect(Array.from(fromRowQuads(inArena, 8, 8))).toEqual(Array.from(rowMajor));
    // Outside the kernels' memory, or with columns the tile cannot step through, it stays row-major.
    const outside = new Float32Array(new SharedArrayBuffer(8 * 8 * 4));
    outside.set(rowMajor);
    expect(layOutForTile(outside, 8, 8)).toBe(false);
    const odd = shareArray(values(8 * 6));
    const before = Array.from(odd);
    expect(layOutForTile(odd, 8, 6)).toBe(false);
    expect(Array.from(odd)).toEqual(before);
    expect(inRowQuads(outside) || inRowQuads(odd)).toBe(false);
  });
});

describe("readers of an f32 weight in row quads", () => {
  const [rows, cols] = [11, 16];
  const rowMajor = values(rows * cols);
  const plain: Weight = { dtype: "f32", rows, cols, data: shareArray(rowMajor) };
  const data = shareArray(rowMajor);
  layOutForTile(data, rows, cols);
  const quads: Weight = { dtype: "f32", rows, cols, data, layout: "row-quads" };

  it("weightAt (the scalar reference, MLA's absorbed kv_b) reads every value as row-major does", () => {
    for (let r = 0; r < rows; r++) {
      for (let k = 0; k < cols; k++) expect(weightAt(quads, r, k)).toBe(weightAt(plain, r, k));
    }
  });

  it("embed (a tied LM head's table) gathers every row as from the row-major table", () => {
    const tokens = Array.from({ length: rows }, (_, t) => rows - 1 - t);
    const a = new Float32Array(rows * cols);
    const b = new Float32Array(rows * cols);
    embed(plain, tokens, a);
    embed(quads, tokens, b);
    expect(Array.from(b)).toEqual(Array.from(a));
  });
});
