import { toLanesInPlace } from "../../../formats/fp8-lanes.js";
import { interleaveRows } from "../../../formats/fp8-quads.js";
import { relayInPlace } from "./relay-in-place.js";

/**
 * FP8 codes (whole groups of 16) in file order re-laid in lanes order (formats/fp8-lanes.ts) in
 * place: by fp8-relayout.wat's to_lanes where they lie in the kernels' shared memory, as a load
 * places them, else by toLanesInPlace, its plain reference (the same bytes, slower by far).
 */
export function relayToLanes(codes: Uint8Array): Uint8Array {
  return relayInPlace(codes, "matmul/fp8-relayout", "to_lanes", toLanesInPlace);
}

/**
 * FP8 codes of matrices of `cols` columns (a multiple of 32; rows, of the whole run, of 4) in file
 * order re-laid in quads order (formats/fp8-quads.ts) in place: lanes order as relayToLanes lays
 * it, then each group of four rows interleaved.
 */
export function relayToQuads(codes: Uint8Array, cols: number): Uint8Array {
  return interleaveRows(relayToLanes(codes), cols);
}
