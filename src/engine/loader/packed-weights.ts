import { openPacked, type PackedTensor, readPackedTensors } from "../../formats/index.js";
import { sharedArray } from "../tensor/weight.js";
import { type HostTensor, type HostWeights, parameterCount } from "./host-tensor.js";

/**
 * The weights of packed directory `dir` (`bringup weights pack`): each tensor allocated once where
 * the kernels read it (the shared WebAssembly memory) and every rank's file read straight into it,
 * all ranks at once, with no per-tensor header, decode or copy. The manifest and the files' sizes
 * are checked before any read, and every shard's CRC-32 as it lands; any failure throws before a
 * model exists. Errors name the manifest, a rank file or a tensor.
 */
export async function readPackedWeights(dir: string): Promise<HostWeights> {
  const packed = await openPacked(dir);
  const tensors = new Map<string, HostTensor>();
  let numParameters = 0;
  await readPackedTensors(packed, (t: PackedTensor) => {
    const elements = t.shape.reduce((a, b) => a * b, 1);
    const data =
      t.dtype === "F32"
        ? sharedArray(Float32Array, elements)
        : t.dtype === "BF16" || t.dtype === "F16"
          ? sharedArray(Uint16Array, elements)
          : sharedArray(Uint8Array, elements);
    tensors.set(t.name, { dtype: t.dtype as HostTensor["dtype"], shape: t.shape, data });
    numParameters += parameterCount(t.name, data.byteLength, elements);
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  });
  return { tensors, numParameters, source: packed.manifestPath };
}
