import { dtypeBytes, openPacked, type PackedTensor, readPackedTensors } from "../../formats/index.js";
import {
  type HostTensor,
  type HostWeights,
  halvesHostTensor,
  isOcpMxfp4Codes,
  parameterCount,
  sharedHostArray,
} from "./host-tensor.js";

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
  const tensors = new Map<string, HostTensor>();
  let numParameters = 0;
  await readPackedTensors(packed, (t: PackedTensor) => {
    const into = sharedHostArray(
      t.dtype,
      t.shape.reduce((a, b) => a * b, dtypeBytes(t.dtype)),
    );
    tensors.set(t.name, { dtype: t.dtype, shape: t.shape, data: into.data });
    numParameters += parameterCount(t.name, into.bytes.length, into.data.length, t.dtype);
    return into.bytes;
  });
  // MXFP4 codes re-laid out in halves order where they landed, the order every MXFP4 kernel reads fastest.
  for (const [name, t] of tensors) {
    if (isOcpMxfp4Codes(name, t.dtype, t.shape))
      tensors.set(name, halvesHostTensor(t.data as Uint8Array, t.shape));
  }
  return { tensors, numParameters, source: packed.manifestPath };
}
