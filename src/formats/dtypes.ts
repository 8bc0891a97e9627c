import { BringupError } from "../common/errors.js";

/** The safetensors dtype names this project reads and writes, with their element size in bytes. */
export const DTYPE_BYTES = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
  F8_E8M0: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
} as const;

export type Dtype = keyof typeof DTYPE_BYTES;

/**
 * The dtypes the engine keeps in memory as stored (engine/loader/host-tensor.ts): floats, FP8 and
 * E8M0 scales, MXFP4 bytes, and integer tables (DeepSeek-V4's I8 per-expert FP4, its I32 tid2eid).
 * The loader reads tensors of these and no others; a pack (packed-write.ts) refuses any other.
 */
export const STORED_DTYPES = [
  "F32",
  "BF16",
  "F16",
  "F8_E4M3",
  "F8_E8M0",
  "U8",
  "I8",
  "I32",
  "I64",
] as const satisfies readonly Dtype[];
export type StoredDtype = (typeof STORED_DTYPES)[number];

export const DTYPES = Object.keys(DTYPE_BYTES) as Dtype[];

export function isDtype(value: unknown): value is Dtype {
  return typeof value === "string" && Object.hasOwn(DTYPE_BYTES, value);
}

export function dtypeBytes(dtype: Dtype): number {
  return DTYPE_BYTES[dtype];
}

export function parseDtype(value: unknown, subject?: string): Dtype {
  if (!isDtype(value)) {
    throw new BringupError(
      "UNKNOWN_DTYPE",
      `${subject ?? "tensor"}: unknown dtype ${JSON.stringify(value)}; known dtypes are ${DTYPES.join(", ")}.`,
      { subject },
    );
  }
  return value;
}

/** The number of elements of a shape; a scalar (shape []) has one. */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const dim of shape) count *= dim;
  return count;
}
