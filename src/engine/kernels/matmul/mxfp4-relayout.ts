import { toHalvesInto } from "../../../formats/mxfp4-halves.js";
import { relayInPlace } from "./relay-in-place.js";

/**
 * MXFP4 codes (whole blocks of 16) in OCP order re-laid out in halves order (formats/mxfp4-halves.ts)
 * in place: by mxfp4-relayout.wat's to_halves where they lie in the kernels' shared memory, as a
 * load places them, else by toHalvesInto, its plain reference (the same bytes, slower by far).
 */
export function relayToHalves(codes: Uint8Array): Uint8Array {
  return relayInPlace(codes, "matmul/mxfp4-relayout", "to_halves", (c) => toHalvesInto(c, c));
}
