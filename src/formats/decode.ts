import { BringupError } from "../common/errors.js";
import { bf16ToFloat32 } from "./bf16.js";
import { type Dtype, dtypeBytes } from "./dtypes.js";
import { e8m0Table } from "./e8m0.js";
import { decodeTable, FLOAT16, FP8_E4M3FN, FP8_E5M2 } from "./minifloat.js";

// safetensors data is little-endian, as is every host Node runs on here; typed arrays read it directly.
const tables = {
  F16: lazy(() => decodeTable(FLOAT16)),
  F8_E4M3: lazy(() => decodeTable(FP8_E4M3FN)),
  F8_E5M2: lazy(() => decodeTable(FP8_E5M2)),
  F8_E8M0: lazy(() => e8m0Table()),
};

function lazy<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

/** A view of `bytes` as `Ctor`, copying only when the bytes are not aligned for it. */
function view<T>(
  bytes: Uint8Array,
  size: number,
  Ctor: new (buffer: ArrayBufferLike, byteOffset: number, length: number) => T,
): T {
  const aligned = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
  return new Ctor(aligned.buffer, aligned.byteOffset, aligned.byteLength / size);
}

/** The float32 value of every code of an 8- or 16-bit format decoded by table. */
export function codeTable(dtype: keyof typeof tables): Float32Array {
  return tables[dtype]();
}

function fromTable(table: Float32Array, codes: ArrayLike<number>): Float32Array {
  const out = new Float32Array(codes.length);
  for (let i = 0; i < codes.length; i += 1) out[i] = table[codes[i] as number] as number;
  return out;
}

/**
 * Decodes raw little-endian tensor bytes of any floating or integer dtype to float32 values. Floating
 * formats of at most 32 bits decode exactly; F64 and 64-bit integers round to the nearest float32.
 */
export function decodeToFloat32(dtype: Dtype, bytes: Uint8Array, subject?: string): Float32Array {
  const size = dtypeBytes(dtype);
  if (bytes.byteLength % size !== 0) {
    throw new BringupError(
      "BAD_TENSOR_BYTES",
      `${subject ?? "tensor"}: ${bytes.byteLength} bytes are not a whole number of ${dtype} elements.`,
      { subject },
    );
  }
  switch (dtype) {
    case "F32":
      return view(bytes, 4, Float32Array).slice();
    case "F64":
      return Float32Array.from(view(bytes, 8, Float64Array));
    case "BF16":
      return bf16ToFloat32(view(bytes, 2, Uint16Array));
    case "F16":
      return fromTable(tables.F16(), view(bytes, 2, Uint16Array));
    case "F8_E4M3":
    case "F8_E5M2":
    case "F8_E8M0":
      return fromTable(tables[dtype](), bytes);
    case "BOOL":
    case "U8":
      return Float32Array.from(bytes);
    case "I8":
      return Float32Array.from(view(bytes, 1, Int8Array));
    case "I16":
      return Float32Array.from(view(bytes, 2, Int16Array));
    case "U16":
      return Float32Array.from(view(bytes, 2, Uint16Array));
    case "I32":
      return Float32Array.from(view(bytes, 4, Int32Array));
    case "U32":
      return Float32Array.from(view(bytes, 4, Uint32Array));
    case "I64":
      return Float32Array.from(view(bytes, 8, BigInt64Array), Number);
    case "U64":
      return Float32Array.from(view(bytes, 8, BigUint64Array), Number);
  }
}
