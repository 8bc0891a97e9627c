import { BringupError } from "../../../common/errors.js";
import type { Weight } from "../../tensor/weight.js";

/**
 * The shared K of matmuls of `weights` over one input x [M, K] into `outs` (out i [M, rows_i]),
 * and their rows in all; throws ENGINE_SHAPE when a weight's columns, the input or an output
 * disagree with them.
 */
export function matmulShapes(
  x: Float32Array,
  M: number,
  weights: readonly Weight[],
  outs: readonly Float32Array[],
): { K: number; totalRows: number } {
  const K = (weights[0] as Weight).cols;
  let totalRows = 0;
  weights.forEach((w, i) => {
    const out = outs[i] as Float32Array;
    if (w.cols !== K || x.length < M * K || out.length < M * w.rows) {
      throw new BringupError(
        "ENGINE_SHAPE",
        `matmul shapes disagree: x ${x.length} for ${M}x${K}, weight ${w.rows}x${w.cols}, out ${out.length}.`,
      );
    }
    totalRows += w.rows;
  });
  return { K, totalRows };
}
