import { HALVES_BLOCKS_SUFFIX, type StoredDtype } from "../../formats/index.js";
import { relayToLanes, relayToQuads } from "../kernels/matmul/fp8-relayout.js";
import { relayToHalves } from "../kernels/matmul/mxfp4-relayout.js";
import { sharedArray } from "../tensor/weight.js";

/**
 * A tensor as stored in a checkpoint, before it becomes an engine weight. Dtype names follow
 * safetensors; integer tables (I32, I64: a hash-routing table) keep their raw little-endian bytes,
 * and so do DeepSeek-V4's packed FP4 experts (I8, two E2M1 values a byte) and E8M0 scales (F8_E8M0).
 */
export interface HostTensor {
  readonly dtype: StoredDtype;
  readonly shape: readonly number[];
  readonly data: Float32Array | Uint16Array | Uint8Array;
  /**
   * "halves": MXFP4 codes stored in OCP order (`W_blocks`) that the loader re-laid out in halves
   * order (formats/mxfp4-halves.ts) as it placed them, the order every MXFP4 kernel reads fastest.
   */
  readonly mxfp4Order?: "halves";
  /**
   * "lanes": FP8 E4M3 codes (rows of a multiple of 32) that the loader re-laid in lanes order
   * (formats/fp8-lanes.ts) as it placed them; "quads": likewise in quads order
   * (formats/fp8-quads.ts), matrices of a multiple of 4 rows, the order the FP8 kernels read fastest.
   */
  readonly fp8Order?: "lanes" | "quads";
}

/** Whether stored tensor `name` holds MXFP4 codes in OCP order: `W_blocks`, U8 [..., groups, 16]. */
function isOcpMxfp4Codes(name: string, dtype: string, shape: readonly number[]): boolean {
  return (
    name.endsWith("_blocks") && !name.endsWith(HALVES_BLOCKS_SUFFIX) && dtype === "U8" && shape.at(-1) === 16
  );
}

/**
 * MXFP4 codes in OCP order where a load placed them (the copy it makes anyway, or the bytes it
 * read in place), re-laid out there in halves order: the tensor that records it.
 */
export function halvesHostTensor(placed: Uint8Array, shape: readonly number[]): HostTensor {
  return { dtype: "U8", shape, data: relayToHalves(placed), mxfp4Order: "halves" };
}

/** Whether a stored tensor holds FP8 codes the loader re-lays in lanes order: rows of whole groups of 32. */
function isRelaidFp8Codes(dtype: string, shape: readonly number[]): boolean {
  return dtype === "F8_E4M3" && shape.length >= 2 && (shape.at(-1) as number) % 32 === 0;
}

/**
 * Stored tensor `name` as a load placed it in the shared memory (sharedHostArray's arrays, filled):
 * MXFP4 codes in OCP order re-laid out there in halves order, the order every MXFP4 kernel reads
 * fastest; FP8 codes in rows of a multiple of 32 re-laid there in quads order (matrices of a
 * multiple of 4 rows) or lanes order, likewise; any other
 * tensor as it is.
 */
export function placedHostTensor(
  name: string,
  dtype: HostTensor["dtype"],
  shape: readonly number[],
  placed: { readonly data: HostTensor["data"]; readonly bytes: Uint8Array },
): HostTensor {
  if (isOcpMxfp4Codes(name, dtype, shape)) return halvesHostTensor(placed.bytes, shape);
  if (isRelaidFp8Codes(dtype, shape)) {
    const cols = shape.at(-1) as number;
    return (shape.at(-2) as number) % 4 === 0
      ? { dtype, shape, data: relayToQuads(placed.bytes, cols), fp8Order: "quads" }
      : { dtype, shape, data: relayToLanes(placed.bytes), fp8Order: "lanes" };
  }
  return { dtype, shape, data: placed.data };
}

/**
 * A zeroed array of `bytes` bytes for a stored dtype's elements (f32 values, 16-bit float bits, or
 * bytes) where the kernels read weights in place (see sharedArray), with a byte view to fill it.
 */
export function sharedHostArray(
  dtype: HostTensor["dtype"],
  bytes: number,
): { readonly data: HostTensor["data"]; readonly bytes: Uint8Array } {
  const data =
    dtype === "F32"
      ? sharedArray(Float32Array, bytes / 4)
      : dtype === "BF16" || dtype === "F16"
        ? sharedArray(Uint16Array, bytes / 2)
        : sharedArray(Uint8Array, bytes);
  return { data, bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/** Looks a tensor up by its checkpoint name. */
export type TensorLookup = (name: string) => HostTensor | undefined;

/** A checkpoint's tensors in the engine's memory, how many parameters they hold, and what errors name. */
export interface HostWeights {
  readonly tensors: Map<string, HostTensor>;
  readonly numParameters: number;
  readonly source: string;
}

/** Parameters a stored tensor holds: MXFP4 blocks two a byte, scales none. */
export function parameterCount(
  name: string,
  bytes: number,
  elements: number,
  dtype?: HostTensor["dtype"],
): number {
  // Integer tables are stored as raw bytes: count their entries, not their bytes.
  if (dtype === "I32" || dtype === "I64") return bytes / (dtype === "I32" ? 4 : 8);
  // The engine reads I8 only as DeepSeek-V4's packed FP4 experts, two values a byte.
  return name.endsWith("_blocks") || dtype === "I8"
    ? bytes * 2
    : name.endsWith("_scales") || name.includes("weight_scale") || dtype === "F8_E8M0"
      ? 0
      : elements;
}
