import { toLanesInPlace } from "../../../formats/fp8-lanes.js";
import { toQuadsInPlace } from "../../../formats/fp8-quads.js";
import { shareArray, type Weight } from "../../tensor/weight.js";

/**
 * An FP8 weight [N, K] of `codes` (file order) with `scale` per block of blockRows x blockCols,
 * its codes re-laid in lanes order (formats/fp8-lanes.ts) or quads order (formats/fp8-quads.ts)
 * when `order` says so.
 */
export function fp8Weight(
  codes: Uint8Array,
  N: number,
  K: number,
  scale: Float32Array,
  blockRows: number,
  blockCols: number,
  order: "file" | "lanes" | "quads" = "file",
): Weight {
  const data =
    order === "lanes"
      ? toLanesInPlace(codes.slice())
      : order === "quads"
        ? toQuadsInPlace(codes.slice(), K)
        : codes;
  return {
    dtype: "fp8_e4m3",
    rows: N,
    cols: K,
    data: shareArray(data),
    scale: { data: shareArray(scale), blockRows, blockCols },
    ...(order === "file" ? {} : { fp8Order: order }),
  };
}
