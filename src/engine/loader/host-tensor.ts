/**
 * A tensor as stored in a checkpoint, before it becomes an engine weight. Dtype names follow
 * safetensors; integer tables (I32, I64: a hash-routing table) keep their raw little-endian bytes.
 */
export interface HostTensor {
  readonly dtype: "F32" | "BF16" | "F16" | "F8_E4M3" | "U8" | "I32" | "I64";
  readonly shape: readonly number[];
  readonly data: Float32Array | Uint16Array | Uint8Array;
}

/** Looks a tensor up by its checkpoint name. */
export type TensorLookup = (name: string) => HostTensor | undefined;
