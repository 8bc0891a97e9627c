import type { ErrorCode } from "../common/error-catalogue.js";
import { BringupError } from "../common/errors.js";
import { type Dtype, dtypeBytes, elementCount, isDtype } from "./dtypes.js";
import { JsonScanner } from "./json-scanner.js";

/** One tensor of a safetensors file: where its bytes lie, relative to the start of the data section. */
export interface TensorInfo {
  readonly name: string;
  readonly dtype: Dtype;
  readonly shape: readonly number[];
  readonly byteLength: number;
  readonly dataOffsets: readonly [number, number];
}

/**
 * A tensor as read from a file: one small object per tensor, held by the file and its checkpoint
 * alike, its shape (frozen) shared with the file's other tensors of that shape.
 */
export class StoredTensor implements TensorInfo {
  constructor(
    readonly name: string,
    readonly dtype: Dtype,
    readonly shape: readonly number[],
    /** Where its bytes begin and end, relative to the start of the data section. */
    readonly begin: number,
    readonly end: number,
    /** The safetensors file holding the tensor. */
    readonly file: string,
  ) {}

  get byteLength(): number {
    return this.end - this.begin;
  }

  get dataOffsets(): readonly [number, number] {
    return [this.begin, this.end];
  }
}

export interface SafetensorsHeader {
  readonly metadata: Readonly<Record<string, string>>;
  /** In data order. */
  readonly tensors: readonly StoredTensor[];
}

/** The reference implementation refuses headers above 100 MB; a larger one is corrupt, not big. */
export const MAX_HEADER_BYTES = 100_000_000;
/**
 * The longest tensor name read, in UTF-8 bytes. Public checkpoints' names are under 200 bytes; a
 * longer one is a crafted header, refused before the name is built (one of 99 MB took 1.5 GB).
 */
export const MAX_NAME_BYTES = 4096;
/**
 * The most tensors a checkpoint is read with. The largest public checkpoints hold about 140,000
 * (Kimi K2: 384 experts in 60 layers, each projection an FP8 weight and its scales); a header
 * listing millions of empty tensors only costs time and memory, so it is refused as soon as it
 * passes this.
 */
export const MAX_TENSORS = 2 ** 18;
/**
 * The most dimensions a checkpoint's shapes list in all: public checkpoints average under 3 per
 * tensor; a crafted header of one shape of 50 million ones would otherwise take 400 MB to hold.
 */
export const MAX_DIMENSIONS = 2 ** 21;
/**
 * The most characters of tensor names and metadata (keys and values) a checkpoint holds in all: the
 * largest public ones hold under 10 million (Kimi K2's 140,000 names of about 60); each is 1 or 2
 * bytes held, for as long as the checkpoint is open.
 */
export const MAX_TEXT_CHARS = 2 ** 25;
/** The most `__metadata__` entries read; public checkpoints have a handful ("format": "pt"). */
export const MAX_METADATA_ENTRIES = 2 ** 16;
const METADATA_KEY = "__metadata__";

/** What a checkpoint may still hold while its shards' headers are read: bounds memory and time. */
export interface HeaderBudget {
  /** Tensors left to read. */
  tensors: number;
  /** Shape dimensions left. */
  dimensions: number;
  /** Characters of names and metadata left. */
  text: number;
}

/** A whole checkpoint's budget, shared by its shards. */
export function checkpointBudget(): HeaderBudget {
  return { tensors: MAX_TENSORS, dimensions: MAX_DIMENSIONS, text: MAX_TEXT_CHARS };
}

function fail(code: ErrorCode, file: string, what: string, tensor?: string): never {
  const where = tensor === undefined ? file : `${file}: tensor ${JSON.stringify(tensor)}`;
  throw new BringupError(code, `${where}: ${what}`, {
    subject: tensor === undefined ? file : `${file}#${tensor}`,
  });
}

/** What is read of an entry's fields; a shape with dimensions past 2^53 keeps them as bigint. */
interface Fields {
  dtype?: Dtype;
  shape?: (number | bigint)[];
  offsets?: [number, number];
}

/**
 * Parses and validates the JSON header of a safetensors file whose data section is `dataLength`
 * bytes, accepting exactly what the safetensors crate accepts (huggingface/safetensors,
 * safetensors/src/tensor.rs: `read_metadata`, `Metadata::validate`), but for dtypes this project
 * cannot read and names holding control characters (U+0000-U+001F, U+007F), which no checkpoint
 * has and which would garble a terminal listing them. As there: a tensor entry is an object (other
 * fields ignored, none repeated) or a [dtype, shape, data_offsets] array; shapes and offsets are
 * unsigned integers written as such (`64.0` is not one); a name listed twice keeps its last entry;
 * tensors tile the data section back to back. Refuses a header holding more tensors, dimensions or
 * characters of names and metadata than `budget` has left (by default a whole checkpoint's), as
 * soon as it does, and takes what it holds from it: a checkpoint's shards share one.
 */
export function parseSafetensorsHeader(
  header: Uint8Array,
  dataLength: number,
  file: string,
  budget: HeaderBudget = checkpointBudget(),
): SafetensorsHeader {
  const json = new JsonScanner(header, (what, at) =>
    fail(
      "SAFETENSORS_BAD_HEADER",
      file,
      `the header is not valid JSON as safetensors reads it (${what} at byte ${at}); the file is corrupt or not safetensors.`,
    ),
  );
  let metadata: Record<string, string> | undefined;
  let metadataSeen = false;
  const entries = new Map<string, StoredTensor>();
  /** Shapes with a dimension past 2^53, as written: rare, and only for the byte count. */
  const wide = new Map<StoredTensor, bigint[]>();
  /** One frozen array per distinct shape: checkpoints repeat a few shapes many times over. */
  const shapes = new Map<string, readonly number[]>();
  let read = 0;
  const spend = (chars: number, tensor?: string) => {
    budget.text -= chars;
    if (budget.text < 0) {
      fail(
        "SAFETENSORS_OVER_LIMIT",
        file,
        `the checkpoint's tensor names and metadata come to more than ${MAX_TEXT_CHARS} characters; public checkpoints hold far fewer, so the header is corrupt or crafted.`,
        tensor,
      );
    }
  };
  if (json.peek() !== 0x7b)
    fail("SAFETENSORS_BAD_HEADER", file, "the header must be a JSON object of tensors.");
  json.items(
    "{",
    (name) => {
      if (name === METADATA_KEY) {
        if (metadataSeen) fail("SAFETENSORS_BAD_HEADER", file, "__metadata__ is given twice.");
        metadataSeen = true;
        metadata = readMetadata(json, file, spend);
        return;
      }
      read += 1;
      if (read > budget.tensors) {
        fail(
          "SAFETENSORS_TOO_MANY_TENSORS",
          file,
          `the checkpoint lists more than ${MAX_TENSORS} tensors; public checkpoints hold far fewer, so the header is corrupt or crafted.`,
        );
      }
      if (hasControlCharacter(name)) {
        fail(
          "SAFETENSORS_BAD_NAME",
          file,
          `tensor name ${JSON.stringify(name)} holds a control character; no checkpoint names a tensor so, so the file is corrupt or crafted.`,
        );
      }
      spend(name.length, name);
      const { entry, bigShape } = readEntry(json, file, name, budget, shapes);
      const previous = entries.get(name);
      if (previous !== undefined) wide.delete(previous);
      entries.delete(name); // a repeated name keeps its last entry, as a JSON map does
      entries.set(name, entry);
      if (bigShape !== undefined) wide.set(entry, bigShape);
    },
    MAX_NAME_BYTES,
  );
  json.end();
  budget.tensors -= entries.size;

  shapes.clear();
  const tensors: StoredTensor[] = [];
  for (const [name, entry] of entries) {
    const { dtype, begin, end } = entry;
    const shape = wide.get(entry) ?? entry.shape;
    if (end < begin || end > dataLength) {
      fail(
        "SAFETENSORS_OUT_OF_RANGE",
        file,
        `data_offsets [${begin}, ${end}] are not a range inside the data section (${dataLength} bytes); the file is truncated or corrupt.`,
        name,
      );
    }
    const expected = byteCount(shape, dtype);
    if (expected === undefined) {
      fail(
        "SAFETENSORS_SHAPE_MISMATCH",
        file,
        `shape [${shape.join(", ")}] of ${dtype} needs 2^64 bytes or more; the file is corrupt.`,
        name,
      );
    }
    if (end - begin !== expected) {
      fail(
        "SAFETENSORS_SHAPE_MISMATCH",
        file,
        `shape [${shape.join(", ")}] of ${dtype} needs ${expected} bytes but data_offsets [${begin}, ${end}] give ${end - begin}.`,
        name,
      );
    }
    // A dimension past 2^53 is left only in a tensor of no elements, where it is shown rounded.
    tensors.push(entry);
  }
  entries.clear();
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);
  // As the safetensors crate validates: tensors tile the data section, back to back from 0 to its end.
  let expected = 0;
  for (const [i, current] of tensors.entries()) {
    const { begin, end } = current;
    const previous = tensors[i - 1];
    if (begin < expected && previous !== undefined) {
      fail(
        "SAFETENSORS_OVERLAP",
        file,
        `bytes [${begin}, ${end}] overlap tensor ${JSON.stringify(previous.name)} [${previous.begin}, ${previous.end}]; the file is corrupt.`,
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
  return { metadata: metadata ?? {}, tensors };
}

function hasControlCharacter(name: string): boolean {
  for (let i = 0; i < name.length; i += 1) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** `__metadata__`: null, or an object of strings (a repeated key keeps its last value). */
function readMetadata(
  json: JsonScanner,
  file: string,
  spend: (chars: number) => void,
): Record<string, string> | undefined {
  if (json.literal("null")) return undefined;
  const bad = () => fail("SAFETENSORS_BAD_HEADER", file, "__metadata__ must map strings to strings.");
  if (json.peek() !== 0x7b) bad();
  const metadata: Record<string, string> = {};
  let entries = 0;
  json.items("{", (key) => {
    if (json.peek() !== 0x22) bad();
    entries += 1;
    if (entries > MAX_METADATA_ENTRIES) {
      fail(
        "SAFETENSORS_OVER_LIMIT",
        file,
        `__metadata__ has more than ${MAX_METADATA_ENTRIES} entries; public checkpoints have a handful, so the header is corrupt or crafted.`,
      );
    }
    const value = json.string();
    spend(key.length + value.length);
    Object.defineProperty(metadata, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });
  return metadata;
}

const FIELDS = ["dtype", "shape", "data_offsets"] as const;

/** One tensor's entry: an object of its fields, or the array [dtype, shape, data_offsets]. */
function readEntry(
  json: JsonScanner,
  file: string,
  name: string,
  budget: HeaderBudget,
  shapes: Map<string, readonly number[]>,
): { entry: StoredTensor; bigShape?: bigint[] } {
  const entry: Fields = {};
  const field = (key: (typeof FIELDS)[number]) => {
    if (key === "dtype") entry.dtype = readDtype(json, file, name);
    else if (key === "shape") entry.shape = readUnsigned(json, file, name, "shape", 0, budget);
    else {
      // An offset past 2^53 is past any file, so rounding it leaves it refused as out of range.
      const [begin, end] = readUnsigned(json, file, name, "data_offsets", 2).map(Number);
      entry.offsets = [begin as number, end as number];
    }
  };
  const c = json.peek();
  if (c === 0x5b) {
    let k = 0;
    json.items("[", () => {
      const key = FIELDS[k++];
      if (key === undefined)
        fail("SAFETENSORS_BAD_HEADER", file, "an entry written as an array has 3 items.", name);
      field(key);
    });
    return complete(entry, file, name, shapes);
  }
  if (c !== 0x7b)
    fail(
      "SAFETENSORS_BAD_HEADER",
      file,
      "the entry must be an object of dtype, shape and data_offsets.",
      name,
    );
  const seen = new Set<string>();
  json.items("{", (key) => {
    const known = FIELDS.find((f) => f === key);
    if (known === undefined) return json.skip(); // other fields are ignored, as the reference does
    if (seen.has(known)) fail("SAFETENSORS_BAD_HEADER", file, `the entry gives ${known} twice.`, name);
    seen.add(known);
    field(known);
  });
  return complete(entry, file, name, shapes);
}

/** The entry, once it has every field; each entry must, even one a later repeat of its name replaces. */
function complete(
  entry: Fields,
  file: string,
  name: string,
  shapes: Map<string, readonly number[]>,
): { entry: StoredTensor; bigShape?: bigint[] } {
  const { dtype, shape, offsets } = entry;
  if (dtype === undefined || shape === undefined || offsets === undefined) {
    const missing = [dtype ? "" : "dtype", shape ? "" : "shape", offsets ? "" : "data_offsets"];
    fail(
      "SAFETENSORS_BAD_HEADER",
      file,
      `the entry lacks ${missing.filter(Boolean).join(" and ")}; each tensor needs dtype, shape and data_offsets.`,
      name,
    );
  }
  const key = shape.join(",");
  let shared = shapes.get(key);
  if (shared === undefined) {
    shared = Object.freeze(shape.map(Number));
    shapes.set(key, shared);
  }
  const stored = new StoredTensor(name, dtype, shared, offsets[0], offsets[1], file);
  if (shape.every((d) => typeof d === "number")) return { entry: stored };
  return { entry: stored, bigShape: shape.map(BigInt) };
}

/** A dtype: its name as a string, or (as serde reads an enum) an object {name: null}. */
function readDtype(json: JsonScanner, file: string, name: string): Dtype {
  let dtype: string | undefined;
  if (json.peek() === 0x22) dtype = json.string(64);
  else if (json.peek() === 0x7b) {
    let keys = 0;
    let unit = true;
    json.items("{", (key) => {
      keys += 1;
      dtype = key;
      if (!json.literal("null")) {
        unit = false;
        json.skip();
      }
    });
    if (keys !== 1 || !unit) dtype = undefined;
  }
  if (!isDtype(dtype))
    fail("SAFETENSORS_UNKNOWN_DTYPE", file, `unknown dtype ${JSON.stringify(dtype ?? null)}.`, name);
  return dtype;
}

/**
 * A list of unsigned integers (exactly `length` of them when length > 0), each below 2^64 as a
 * usize is; those past 2^53 as bigint.
 */
function readUnsigned(
  json: JsonScanner,
  file: string,
  name: string,
  what: string,
  length: number,
  budget?: HeaderBudget,
): (number | bigint)[] {
  const bad = (why: string): never =>
    fail(
      "SAFETENSORS_BAD_HEADER",
      file,
      `${what} must be ${length > 0 ? `${length} ` : "a list of "}unsigned integers written without sign, fraction or exponent (${why}).`,
      name,
    );
  if (json.peek() !== 0x5b) bad("it is not a list");
  const values: (number | bigint)[] = [];
  json.items("[", () => {
    const c = json.peek();
    if (c !== 0x2d && !(c >= 0x30 && c <= 0x39)) bad("found a value that is not a number");
    const { text, unsigned } = json.number();
    if (!unsigned) bad(`found ${text}`);
    if (budget !== undefined && --budget.dimensions < 0) {
      fail(
        "SAFETENSORS_OVER_LIMIT",
        file,
        `the checkpoint's shapes list more than ${MAX_DIMENSIONS} dimensions in all; public checkpoints hold a few per tensor, so the header is corrupt or crafted.`,
        name,
      );
    }
    if (text.length <= 15) values.push(Number(text));
    else if (BigInt(text) < U64_LIMIT) values.push(BigInt(text));
    else bad(`${text} is 2^64 or more`);
  });
  if (length > 0 && values.length !== length) bad(`found ${values.length}`);
  return values;
}

const U64_LIMIT = 2n ** 64n;

/**
 * Bytes of a tensor of this shape and dtype, or undefined where the crate's checked products
 * overflow 64 bits (a shape past that is corrupt even when a zero among its dimensions comes later).
 */
function byteCount(shape: readonly (number | bigint)[], dtype: Dtype): number | undefined {
  let product = dtypeBytes(dtype);
  for (const d of shape) {
    product *= Number(d);
    if (!Number.isSafeInteger(product)) break;
  }
  if (Number.isSafeInteger(product)) return product;
  let exact = 1n;
  for (const d of shape) {
    exact *= BigInt(d);
    if (exact >= U64_LIMIT) return undefined;
  }
  exact *= BigInt(dtypeBytes(dtype));
  return exact >= U64_LIMIT ? undefined : Number(exact);
}

export interface TensorLayout {
  readonly name: string;
  readonly dtype: Dtype;
  readonly shape: readonly number[];
}

/**
 * The header's JSON text in pieces of about 64 K characters, for tensors laid out back to back in
 * the given order (keys in that order, `__metadata__` first), each tensor's record handed to
 * `laid` as it is placed: no object of every entry is built, as a header may list 262,144.
 */
function* headerText(
  layouts: Iterable<TensorLayout>,
  metadata: Readonly<Record<string, string>>,
  file: string,
  laid?: (tensor: StoredTensor) => void,
): Generator<string> {
  let piece = Object.keys(metadata).length > 0 ? `{"${METADATA_KEY}":${JSON.stringify(metadata)}` : "{";
  let comma = piece.length > 1;
  let offset = 0;
  for (const { name, dtype, shape } of layouts) {
    if (name === METADATA_KEY) {
      throw new BringupError(
        "SAFETENSORS_BAD_NAME",
        `tensor name ${JSON.stringify(name)} is reserved; give each tensor a unique name.`,
        { subject: name },
      );
    }
    const end = offset + elementCount(shape) * dtypeBytes(dtype);
    laid?.(new StoredTensor(name, dtype, shape, offset, end, file));
    piece += `${comma ? "," : ""}${JSON.stringify(name)}:{"dtype":"${dtype}","shape":[${shape.join(",")}],"data_offsets":[${offset},${end}]}`;
    offset = end;
    comma = true;
    if (piece.length >= 2 ** 16) {
      yield piece;
      piece = "";
    }
  }
  yield `${piece}}`;
}

/**
 * The header bytes for tensors laid out back to back in the given order, padded with spaces to a
 * multiple of 8 as the reference writer does, so the data section starts aligned, and each
 * tensor's record (its `file` is `file`). Refuses a name given twice or the reserved `__metadata__`.
 */
export function encodeSafetensorsHeader(
  layouts: readonly TensorLayout[],
  metadata: Readonly<Record<string, string>> = {},
  file = "",
): { header: Uint8Array; tensors: StoredTensor[]; byName: Map<string, StoredTensor> } {
  const tensors: StoredTensor[] = [];
  const byName = new Map<string, StoredTensor>();
  const pieces = [
    ...headerText(layouts, metadata, file, (t) => {
      if (byName.has(t.name)) {
        throw new BringupError(
          "SAFETENSORS_BAD_NAME",
          `tensor name ${JSON.stringify(t.name)} is repeated; give each tensor a unique name.`,
          { subject: t.name },
        );
      }
      byName.set(t.name, t);
      tensors.push(t);
    }),
  ];
  const length = pieces.reduce((n, piece) => n + Buffer.byteLength(piece), 0);
  const header = new Uint8Array(Math.ceil(length / 8) * 8).fill(0x20);
  const encoder = new TextEncoder();
  let at = 0;
  for (const piece of pieces) at += encoder.encodeInto(piece, header.subarray(at)).written;
  return { header, tensors, byName };
}

/** The bytes encodeSafetensorsHeader would make of these tensors, padding included, made a piece at a time. */
export function safetensorsHeaderBytes(
  layouts: Iterable<TensorLayout>,
  metadata: Readonly<Record<string, string>> = {},
): number {
  let length = 0;
  for (const piece of headerText(layouts, metadata, "")) length += Buffer.byteLength(piece);
  return Math.ceil(length / 8) * 8;
}
