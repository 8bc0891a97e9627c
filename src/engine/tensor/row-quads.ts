/**
 * The row-quads layout of an f32 matrix [rows, cols] (cols a multiple of 4): its rows in groups of
 * four, each group's 4·cols values interleaved every four values,
 *
 *   [r0 k0-3][r1 k0-3][r2 k0-3][r3 k0-3][r0 k4-7][r1 k4-7]...
 *
 * so the matmul tile (kernels/matmul/matmul-tile.wat), which dots four rows at once, reads a group
 * as one sequential stream rather than four streams cols floats apart. A ragged last group (rows
 * not a multiple of 4) keeps its rows row-major after the whole groups, so the matrix still holds
 * exactly rows·cols values and a row r past the whole groups lies where row-major puts it.
 *
 * W[r][k] lies at quadIndex(r, k, rows, cols). A stack of matrices (experts) is laid out matrix by
 * matrix, so each matrix's slice of the stack is itself a row-quads matrix.
 */
import { BringupError } from "../../common/errors.js";
import { wasmArena } from "../kernels/wasm-arena.js";
import type { Weight } from "./weight.js";

/** Arrays layOutForTile has laid out in row quads (each once, in place), with their matrices' shape. */
const laidOut = new WeakMap<Float32Array, { readonly rows: number; readonly cols: number }>();

/**
 * Lays out the `count` row-major [rows, cols] matrices stacked in `data` in row quads, in place,
 * where the tile reads them in place (in the kernels' shared memory, wasm-arena.ts) and cols is a
 * multiple of 4; whether `data` is now in row quads. An array already laid out is not touched
 * again, so a checkpoint tensor read as a matrix twice (or by two models) is permuted once; read
 * as matrices of another number of rows, where the two layouts differ (either number not a
 * multiple of 4), it is refused naming `name`.
 */
export function layOutForTile(
  data: Float32Array,
  rows: number,
  cols: number,
  count = 1,
  name = "an f32 tensor",
): boolean {
  const had = laidOut.get(data);
  if (had !== undefined) {
    // Groups of four rows of the same width are laid out alike however many groups a matrix has.
    if (had.cols === cols && (had.rows === rows || (had.rows % 4 === 0 && rows % 4 === 0))) return true;
    throw new BringupError(
      "WEIGHT_LAYOUT_CONFLICT",
      `${name} was laid out for the matmul as matrices of [${had.rows}, ${had.cols}] and is now read as matrices of [${rows}, ${cols}]; a model must read one tensor in one shape (read it with WeightSource.tensor to get its values row-major).`,
      { subject: name },
    );
  }
  if (!quadsFit(cols) || (wasmArena()?.offsetOf(data) ?? -1) < 0) return false;
  toRowQuads(data, rows, cols, count);
  laidOut.set(data, { rows, cols });
  return true;
}

/** The `layout` of f32 matrices over `data` after layOutForTile(data, rows, cols, count, name). */
export function tileLayout(
  data: Float32Array,
  rows: number,
  cols: number,
  count = 1,
  name?: string,
): Pick<Weight, "layout"> {
  return layOutForTile(data, rows, cols, count, name) ? { layout: "row-quads" } : {};
}

/** Whether layOutForTile laid `data` out in row quads. */
export function inRowQuads(data: Float32Array | Uint16Array | Uint8Array): boolean {
  return data instanceof Float32Array && laidOut.has(data);
}

/** Rows in the whole groups of four of a matrix of `rows` rows; later rows stay row-major. */
export function quadRows(rows: number): number {
  return rows & ~3;
}

/** The index of W[r][k] in a row-quads matrix [rows, cols]. */
export function quadIndex(r: number, k: number, rows: number, cols: number): number {
  if (r >= quadRows(rows)) return r * cols + k;
  return (r & ~3) * cols + (k & ~3) * 4 + (r & 3) * 4 + (k & 3);
}

/** Whether a matrix of `cols` columns can be laid out in row quads. */
export function quadsFit(cols: number): boolean {
  return cols > 0 && cols % 4 === 0;
}

/**
 * Lays out each of the `count` row-major [rows, cols] matrices stacked in `data` in row quads, in
 * place (through a copy of one group of four rows at a time).
 */
export function toRowQuads(data: Float32Array, rows: number, cols: number, count = 1): void {
  const group = new Float32Array(4 * cols);
  for (let e = 0; e < count; e++) {
    for (let r0 = 0; r0 < quadRows(rows); r0 += 4) {
      const at = (e * rows + r0) * cols;
      group.set(data.subarray(at, at + 4 * cols));
      for (let j = 0; j < 4; j++) {
        for (let k = 0; k < cols; k += 4) {
          const from = j * cols + k;
          const to = at + k * 4 + j * 4;
          data[to] = group[from] as number;
          data[to + 1] = group[from + 1] as number;
          data[to + 2] = group[from + 2] as number;
          data[to + 3] = group[from + 3] as number;
        }
      }
    }
  }
}

/** Row r of the row-quads matrix [rows, cols] that starts at `data[base]`, into dst[at, at + cols). */
export function quadRow(
  data: Float32Array,
  base: number,
  rows: number,
  cols: number,
  r: number,
  dst: Float32Array,
  at: number,
): void {
  if (r >= quadRows(rows)) {
    dst.set(data.subarray(base + r * cols, base + (r + 1) * cols), at);
    return;
  }
  let from = base + (r & ~3) * cols + (r & 3) * 4;
  for (let k = 0; k < cols; k += 4, from += 16) {
    dst[at + k] = data[from] as number;
    dst[at + k + 1] = data[from + 1] as number;
    dst[at + k + 2] = data[from + 2] as number;
    dst[at + k + 3] = data[from + 3] as number;
  }
}

/** A row-major copy of the `count` row-quads matrices [rows, cols] stacked in `data`. */
export function fromRowQuads(data: Float32Array, rows: number, cols: number, count = 1): Float32Array {
  const out = new Float32Array(count * rows * cols);
  for (let e = 0; e < count; e++) {
    const base = e * rows * cols;
    for (let r = 0; r < rows; r++) quadRow(data, base, rows, cols, r, out, base + r * cols);
  }
  return out;
}
