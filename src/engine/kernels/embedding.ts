import { BringupError } from "../../common/errors.js";
import { quadRow } from "../tensor/row-quads.js";
import type { Weight } from "../tensor/weight.js";
import { weightAt } from "./reference.js";

/** out[t] = E[tokens[t]]: gathers embedding rows, decoding narrow dtypes row by row. */
export function embed(table: Weight, tokens: ArrayLike<number>, out: Float32Array): void {
  const dim = table.cols;
  const bits = new Uint32Array(1);
  const asFloat = new Float32Array(bits.buffer);
  for (let t = 0; t < tokens.length; t++) {
    const id = tokens[t] as number;
    if (!Number.isInteger(id) || id < 0 || id >= table.rows) {
      throw new BringupError(
        "TOKEN_OUT_OF_RANGE",
        `token id ${id} is outside the vocabulary (0..${table.rows - 1}).`,
      );
    }
    const o = t * dim;
    const base = id * dim;
    if (table.dtype === "f32" && table.layout === "row-quads") {
      // A tied LM head's table, laid out for the matmul tile.
      quadRow(table.data as Float32Array, 0, table.rows, dim, id, out, o);
    } else if (table.dtype === "f32") {
      out.set(table.data.subarray(base, base + dim) as Float32Array, o);
    } else if (table.dtype === "bf16") {
      for (let i = 0; i < dim; i++) {
        bits[0] = (table.data[base + i] as number) << 16;
        out[o + i] = asFloat[0] as number;
      }
    } else {
      // Narrower embedding tables are rare; the element-wise decoder is fast enough for one row.
      for (let i = 0; i < dim; i++) out[o + i] = weightAt(table, id, i);
    }
  }
}
