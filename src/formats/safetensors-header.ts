import { BringupError } from "../common/errors.js";
import { type Dtype, dtypeBytes, elementCount, isDtype } from "./dtypes.js";
import type { ErrorCode } from "../common/error-catalogue.js";

/** One tensor of a safetensors file: where its bytes lie, relative to the start of the data section. */
export interface TensorInfo {
  readonly name: string;
  readonly dtype: Dtype;
  readonly shape: readonly number[];
  readonly byteLength: number;
  readonly dataOffsets: readonly [number, number];
}

export interface SafetensorsHeader {
  readonly metadata: Readonly<Record<string, string>>;
  /** In data order. */
  readonly tensors: readonly TensorInfo[];
}

/** The reference implementation refuses headers above 100 MB; a larger one is corrupt, not big. */
export const MAX_HEADER_BYTES = 100_000_000;
const METADATA_KEY = "__metadata__";

function fail(code: ErrorCode, file: string, what: string, tensor?: string): never {
  const where = tensor === undefined ? file : `${file}: tensor ${JSON.stringify(tensor)}`;
  throw new BringupError(code, `${where}: ${what}`, {
    subject: tensor === undefined ? file : `${file}#${tensor}`,
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isSize(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/**
 * Parses and validates the JSON header of a safetensors file whose data section is `dataLength`
 * bytes: known dtypes, shapes whose size matches the byte range, ranges inside the data section and
 * no two tensors sharing a byte. Offsets are plain numbers, exact up to 2^53 bytes.
 */
export function parseSafetensorsHeader(
  header: Uint8Array,
  dataLength: number,
  file: string,
): SafetensorsHeader {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(header));
  } catch (error) {
    fail(
      "SAFETENSORS_BAD_HEADER",
      file,
      `the header is not valid UTF-8 JSON (${error instanceof Error ? error.message : String(error)}); the file is corrupt or not safetensors.`,
    );
  }
  if (!isRecord(json)) fail("SAFETENSORS_BAD_HEADER", file, "the header must be a JSON object of tensors.");

  let metadata: Record<string, string> = {};
  const tensors: TensorInfo[] = [];
  for (const [name, entry] of Object.entries(json)) {
    if (name === METADATA_KEY) {
      if (!isRecord(entry) || !Object.values(entry).every((v) => typeof v === "string")) {
        fail("SAFETENSORS_BAD_HEADER", file, "__metadata__ must map strings to strings.");
      }
      metadata = entry as Record<string, string>;
      continue;
    }
    if (!isRecord(entry)) fail("SAFETENSORS_BAD_HEADER", file, "the entry must be an object.", name);
    const keys = Object.keys(entry).sort().join(",");
    if (keys !== "data_offsets,dtype,shape") {
      fail(
        "SAFETENSORS_BAD_HEADER",
        file,
        `the entry must have exactly dtype, shape and data_offsets; it has ${keys || "nothing"}.`,
        name,
      );
    }
    const { dtype, shape, data_offsets: offsets } = entry;
    if (!isDtype(dtype))
      fail("SAFETENSORS_UNKNOWN_DTYPE", file, `unknown dtype ${JSON.stringify(dtype)}.`, name);
    if (!Array.isArray(shape) || !shape.every(isSize)) {
      fail("SAFETENSORS_BAD_HEADER", file, "shape must be a list of non-negative integers.", name);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isSize)) {
      fail("SAFETENSORS_BAD_HEADER", file, "data_offsets must be two non-negative integers.", name);
    }
    const [begin, end] = offsets as [number, number];
    const count = elementCount(shape as number[]);
    const expected = count * dtypeBytes(dtype);
    if (!Number.isSafeInteger(expected) || end < begin || end - begin !== expected) {
      fail(
        "SAFETENSORS_SHAPE_MISMATCH",
        file,
        `shape [${(shape as number[]).join(", ")}] of ${dtype} needs ${expected} bytes but data_offsets [${begin}, ${end}] give ${end - begin}.`,
        name,
      );
    }
    if (end > dataLength) {
      fail(
        "SAFETENSORS_OUT_OF_RANGE",
        file,
        `data_offsets [${begin}, ${end}] run past the data section (${dataLength} bytes); the file is truncated or corrupt.`,
        name,
      );
    }
    tensors.push({
      name,
      dtype,
      shape: shape as number[],
      byteLength: end - begin,
      dataOffsets: [begin, end],
    });
  }
  const repeated = repeatedTopLevelKey(header);
  if (repeated !== undefined) {
    fail(
      "SAFETENSORS_DUPLICATE_NAME",
      file,
      "is listed twice in the header (a JSON reader keeps only one); the file is corrupt.",
      repeated,
    );
  }
  tensors.sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0] || a.dataOffsets[1] - b.dataOffsets[1]);
  // As the safetensors crate validates: tensors tile the data section, back to back from 0 to its end.
  let expected = 0;
  for (const [i, current] of tensors.entries()) {
    const [begin, end] = current.dataOffsets;
    const previous = tensors[i - 1];
    if (begin < expected && previous !== undefined) {
      fail(
        "SAFETENSORS_OVERLAP",
        file,
        `bytes [${begin}, ${end}] overlap tensor ${JSON.stringify(previous.name)} [${previous.dataOffsets[0]}, ${previous.dataOffsets[1]}]; the file is corrupt.`,
        current.name,
      );
    }
    if (begin !== expected) {
      fail(
        "SAFETENSORS_GAP",
        file,
        `starts at byte ${begin} of the data section, but the tensor before it ends at ${expected}; safetensors tensors lie back to back, so the file is corrupt.`,
        current.name,
      );
    }
    expected = end;
  }
  if (expected !== dataLength) {
    fail(
      "SAFETENSORS_TRAILING_BYTES",
      file,
      `the data section is ${dataLength} bytes but its tensors end at ${expected}; ${dataLength - expected} bytes follow them, so the file is corrupt or was appended to.`,
    );
  }
  return { metadata, tensors };
}

/**
 * The first name the header's top-level object repeats. JSON.parse keeps the last of repeated keys
 * silently and no JSON library here reports them, so this walks the (already valid) JSON text.
 */
function repeatedTopLevelKey(header: Uint8Array): string | undefined {
  const text = new TextDecoder().decode(header);
  const seen = new Set<string>();
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      if (depth === 1 && expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (seen.has(key)) return key;
        seen.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === "{" || c === "[") {
      depth += 1;
      expectKey = depth === 1;
    } else if (c === "}" || c === "]") depth -= 1;
    else if (c === "," && depth === 1) expectKey = true;
  }
  return undefined;
}

export interface TensorLayout {
  readonly name: string;
  readonly dtype: Dtype;
  readonly shape: readonly number[];
}

/**
 * The header bytes for tensors laid out back to back in the given order, padded with spaces to a
 * multiple of 8 as the reference writer does, so the data section starts aligned.
 */
export function encodeSafetensorsHeader(
  layouts: readonly TensorLayout[],
  metadata: Readonly<Record<string, string>> = {},
): { header: Uint8Array; tensors: TensorInfo[] } {
  const json: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) json[METADATA_KEY] = metadata;
  const tensors: TensorInfo[] = [];
  let offset = 0;
  for (const { name, dtype, shape } of layouts) {
    if (name === METADATA_KEY || Object.hasOwn(json, name)) {
      throw new BringupError(
        "SAFETENSORS_BAD_NAME",
        `tensor name ${JSON.stringify(name)} is reserved or repeated; give each tensor a unique name.`,
        { subject: name },
      );
    }
    const byteLength = elementCount(shape) * dtypeBytes(dtype);
    const info: TensorInfo = {
      name,
      dtype,
      shape: [...shape],
      byteLength,
      dataOffsets: [offset, offset + byteLength],
    };
    json[name] = { dtype, shape: info.shape, data_offsets: info.dataOffsets };
    tensors.push(info);
    offset += byteLength;
  }
  const text = JSON.stringify(json);
  const raw = new TextEncoder().encode(text);
  const padded = new Uint8Array(Math.ceil(raw.length / 8) * 8).fill(0x20);
  padded.set(raw);
  return { header: padded, tensors };
}
