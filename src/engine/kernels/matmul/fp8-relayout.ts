import { toLanesInPlace } from "../../../formats/fp8-lanes.js";
import { relayInPlace } from "./relay-in-place.js";

/**
 * FP8 codes (whole groups of 16) in file order re-laid in lanes order (formats/fp8-lanes.ts) in
 * place: by fp8-relayout.wat's to_lanes where they lie in the kernels' shared memory, as a load
 * places them, else by toLanesInPlace, its plain reference (the same bytes, slower by far).
 */
export function relayToLanes(codes: Uint8Array): Uint8Array {
  return relayInPlace(codes, "matmul/fp8-relayout", "to_lanes", toLanesInPlace);
}
