import { dtypeBytes, openPacked, type PackedTensor, readPackedTensors } from "../../formats/index.js";
import { type HostWeights, parameterCount, placedHostTensor, sharedHostArray } from "./host-tensor.js";

/**
 * The weights of packed directory `dir` (`bringup weights pack`): each tensor allocated once where
 * the kernels read it (the shared WebAssembly memory) and every rank's file read straight into it,
 * all ranks at once, with no per-tensor header, decode or copy (MXFP4 codes are then re-laid out
 * in halves order in place). The manifest and the files' sizes
 * are checked before any read, and every shard's CRC-32 as it lands; any failure throws before a
 * model exists. Errors name the manifest, a rank file or a tensor.
 */
export async function readPackedWeights(dir: string): Promise<HostWeights> {
  const packed = await openPacked(dir);
  const placed: { t: PackedTensor; into: ReturnType<typeof sharedHostArray> }[] = [];
  let numParameters = 0;
  await readPackedTensors(packed, (t: PackedTensor) => {
    const into = sharedHostArray(
      t.dtype,
      t.shape.reduce((a, b) => a * b, dtypeBytes(t.dtype)),
    );
    placed.push({ t, into });
    numParameters += parameterCount(t.name, into.bytes.length, into.data.length, t.dtype);
    return into.bytes;
  });
  // Only once every byte has landed: MXFP4 codes are re-laid out where they lie.
  const tensors = new Map(
    placed.map(({ t, into }) => [t.name, placedHostTensor(t.name, t.dtype, t.shape, into)] as const),
  );
  return { tensors, numParameters, source: packed.manifestPath };
}
