/**
 * The integer MXFP4 kernel's input quantizers for bench/kernel-before-after.ts's two arms: the
 * working tree's mxfp4-int8.ts, and the one a git revision has (its kernel reads the layout its own
 * quantizer writes), imported by revision-module.ts beside the module it imports (the halves
 * order, where the revision has it).
 */
import { quantizedBytes, quantizeInput } from "../src/engine/kernels/matmul/mxfp4-int8.js";
import { importAtRevision } from "./revision-module.js";

/** An arm's input quantizer (mxfp4-int8.ts's; an older one returned its scales' offset). */
type Quantize = (x: Float32Array, M: number, K: number, buffer: ArrayBufferLike, at: number) => unknown;
export interface Quantizer {
  readonly quantizeInput: Quantize;
  readonly quantizedBytes: typeof quantizedBytes;
}

/** The quantizers of `revision` (before) and of the working tree (after), in the checkout at `root`. */
export async function int8Quantizers(
  root: string,
  revision: string,
): Promise<{ before: Quantizer; after: Quantizer }> {
  return {
    before: await importAtRevision<Quantizer>(root, revision, [
      "src/engine/kernels/matmul/mxfp4-int8.ts",
      "src/formats/mxfp4-halves.ts",
    ]),
    after: { quantizeInput, quantizedBytes },
  };
}
