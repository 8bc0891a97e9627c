import { BringupError } from "../common/errors.js";
import type { Checkpoint } from "./checkpoint.js";
import { codeTable, decodeToFloat32 } from "./decode.js";
import { type DecodeSpace, fp8Fits, SimdDecoder } from "./decode-simd.js";
import type { Dtype } from "./dtypes.js";
import { dtypeBytes, elementCount } from "./dtypes.js";
import { decodeE8m0 } from "./e8m0.js";
import { decodeTable, FP4_E2M1 } from "./minifloat.js";
import {
  checkMxfp4Scales,
  dequantizeMxfp4,
  MXFP4_BLOCK,
  MXFP4_BLOCK_BYTES,
  mxfp4LogicalShape,
} from "./mxfp4.js";
import { fromHalvesInPlace, HALVES_BLOCKS_SUFFIX, MXFP4_HALVES } from "./mxfp4-halves.js";
import { TILE } from "./mxfp4-to-fp8.js";
import type { TensorInfo } from "./safetensors-header.js";

/**
 * A weight as a model sees it, whatever its storage: a plain tensor, MXFP4 (`W_blocks` + `W_scales`),
 * or FP8 E4M3 with a float32 `W_scale_inv` per block of the last two dimensions, as DeepSeek-style
 * checkpoints store it (value = fp8 * scale_inv), with blocks of [128, 128] or [1, 32].
 */
export type LogicalTensor =
  | { kind: "plain"; name: string; shape: readonly number[]; dtype: Dtype; parts: [string] }
  | {
      kind: "mxfp4";
      name: string;
      shape: readonly number[];
      parts: [blocks: string, scales: string];
      /** Codes in halves order (`W_hblocks`, mxfp4-halves.ts); absent: OCP order (`W_blocks`). */
      order?: "halves";
    }
  | {
      kind: "fp8";
      name: string;
      shape: readonly number[];
      block: readonly [number, number];
      parts: [weight: string, scaleInv: string];
    };

/** The FP8 scale blocks this project writes and recognises. */
export const FP8_BLOCKS: readonly (readonly [number, number])[] = [
  [TILE, TILE],
  [1, MXFP4_BLOCK],
];

export function scaleGridShape(shape: readonly number[], block: readonly [number, number]): number[] {
  const rows = shape.at(-2) as number;
  const cols = shape.at(-1) as number;
  return [...shape.slice(0, -2), Math.ceil(rows / block[0]), Math.ceil(cols / block[1])];
}

export type LogicalKind = LogicalTensor["kind"];

function sameDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Looks a stored tensor up by name: a checkpoint's own index, or a map of a list. */
export type FindTensor = (name: string) => TensorInfo | undefined;

const where = (t: TensorInfo) => `${"file" in t ? `${String(t.file)}#` : ""}${t.name}`;

/** The FP8 scale blocks of weight `t` whose `*_scale_inv` is `inv`, if they are a pair. */
function fp8Block(t: TensorInfo, inv: TensorInfo | undefined): readonly [number, number] | undefined {
  if (t.dtype !== "F8_E4M3" || t.shape.length < 2 || inv?.dtype !== "F32") return undefined;
  return FP8_BLOCKS.find((b) => sameDims(inv.shape, scaleGridShape(t.shape, b)));
}

/**
 * The codes of blocks [g0, g1) of an MXFP4 weight in OCP order (into `into` when given), whichever
 * order they are stored in: every reader of MXFP4 codes reads them here.
 */
export async function readMxfp4Codes(
  ck: Checkpoint,
  tensor: LogicalTensor & { kind: "mxfp4" },
  g0: number,
  g1: number,
  into?: Uint8Array,
): Promise<Uint8Array> {
  const codes = await ck.readTensorRange(
    tensor.parts[0],
    g0 * MXFP4_BLOCK_BYTES,
    g1 * MXFP4_BLOCK_BYTES,
    into,
  );
  return tensor.order === MXFP4_HALVES ? fromHalvesInPlace(codes) : codes;
}

/** How a weight's storage reads in reports: `F32`, `fp8-e4m3 [1x32]`, `mxfp4`, `mxfp4 (halves order)`. */
export function formatName(t: LogicalTensor): string {
  if (t.kind === "plain") return t.dtype;
  if (t.kind === "fp8") return `fp8-e4m3 [${t.block.join("x")}]`;
  return t.order === MXFP4_HALVES ? "mxfp4 (halves order)" : "mxfp4";
}

/** The suffixes of MXFP4 codes: OCP order (`W_blocks`), the engine's halves order (`W_hblocks`). */
const BLOCK_SUFFIXES = ["_blocks", HALVES_BLOCKS_SUFFIX] as const;

/** The stored MXFP4 codes of weight `base`, in either order. */
function codesOf(base: string, find: FindTensor): TensorInfo | undefined {
  return find(`${base}_blocks`) ?? find(`${base}${HALVES_BLOCKS_SUFFIX}`);
}

/**
 * What stored tensor `t` is by the public naming conventions: the first part of a weight (that
 * weight), or a later part of one (null). Decided from `t` and the few tensors its name pairs it
 * with, so a checkpoint is read one tensor at a time with no map of its own: a checkpoint of
 * hundreds of thousands of tensors passes through here. Refuses what cannot be decoded: MXFP4
 * blocks without their scales and the reverse, and a name stored both as MXFP4 and as itself,
 * which would make two weights of one name.
 */
export function classifyTensor(t: TensorInfo, find: FindTensor): LogicalTensor | null {
  const codes = BLOCK_SUFFIXES.find((suffix) => t.name.endsWith(suffix));
  if (codes !== undefined) {
    const base = t.name.slice(0, -codes.length);
    const scales = find(`${base}_scales`);
    if (t.dtype !== "U8") {
      throw new BringupError(
        "MXFP4_BAD_DTYPE",
        `${where(t)}: MXFP4 blocks are U8 bytes of two 4-bit codes, not ${t.dtype}; the checkpoint is corrupt or this tensor is misnamed.`,
        { subject: where(t) },
      );
    }
    if (t.shape.length < 2 || t.shape.at(-1) !== MXFP4_BLOCK_BYTES) {
      throw new BringupError(
        "MXFP4_BAD_SHAPE",
        `${where(t)}: MXFP4 blocks need shape [..., groups, 16], not [${t.shape.join(", ")}]; the checkpoint is corrupt or this U8 tensor is misnamed.`,
        { subject: where(t) },
      );
    }
    const wanted = t.shape.slice(0, -1);
    if (scales?.dtype !== "U8" || !sameDims(scales.shape, wanted)) {
      throw new BringupError(
        "MXFP4_SCALES_MISSING",
        `${where(t)}: MXFP4 blocks need ${base}_scales, U8 of shape [${wanted.join(", ")}], ${scales === undefined ? "which is missing" : `not ${scales.dtype} [${scales.shape.join(", ")}]`}; without it the values cannot be decoded, so ${codes === HALVES_BLOCKS_SUFFIX ? "re-lay out the original checkpoint again (bringup weights convert --layout halves)" : "download the checkpoint again"}.`,
        { subject: where(t) },
      );
    }
    const same = find(base) ?? find(base + (codes === "_blocks" ? HALVES_BLOCKS_SUFFIX : "_blocks"));
    if (same !== undefined) {
      throw new BringupError(
        "MXFP4_NAME_CLASH",
        `${where(same)}: the weight ${JSON.stringify(base)} is stored twice, as this tensor and as MXFP4 (${t.name}, ${base}_scales); a loader could take either, so remove one.`,
        { subject: where(same) },
      );
    }
    const shape = mxfp4LogicalShape(t.shape);
    const parts: [string, string] = [t.name, scales.name];
    return codes === HALVES_BLOCKS_SUFFIX
      ? { kind: "mxfp4", name: base, shape, parts, order: MXFP4_HALVES }
      : { kind: "mxfp4", name: base, shape, parts };
  }
  if (t.name.endsWith("_scales")) {
    // Scales whose blocks are missing cannot be decoded, and read as plain bytes they would be wrong.
    const blocks = codesOf(t.name.slice(0, -"_scales".length), find);
    if (blocks !== undefined) {
      classifyTensor(blocks, find); // refuses blocks these scales do not fit
      return null;
    }
    throw new BringupError(
      "MXFP4_BLOCKS_MISSING",
      `${where(t)}: MXFP4 scales without ${t.name.slice(0, -"_scales".length)}_blocks; without the blocks the values cannot be decoded, so download the checkpoint again.`,
      { subject: where(t) },
    );
  }
  const blocks = codesOf(t.name, find);
  if (blocks !== undefined) classifyTensor(blocks, find); // refuses the clash
  if (t.name.endsWith("_scale_inv")) {
    const weight = find(t.name.slice(0, -"_scale_inv".length));
    if (weight !== undefined && fp8Block(weight, t) !== undefined) return null;
  }
  const inv = t.dtype === "F8_E4M3" ? find(`${t.name}_scale_inv`) : undefined;
  const block = inv === undefined ? undefined : fp8Block(t, inv);
  if (inv !== undefined && block !== undefined)
    return { kind: "fp8", name: t.name, shape: t.shape, block, parts: [t.name, inv.name] };
  return { kind: "plain", name: t.name, shape: t.shape, dtype: t.dtype, parts: [t.name] };
}

/** The logical weights of stored tensors, one at a time, in the order of their first parts. */
export function* logicalTensors(tensors: Iterable<TensorInfo>, find: FindTensor): Generator<LogicalTensor> {
  for (const t of tensors) {
    const weight = classifyTensor(t, find);
    if (weight !== null) yield weight;
  }
}

/** The logical weight named `name`, or undefined where there is none. */
export function logicalWeight(name: string, find: FindTensor): LogicalTensor | undefined {
  const stored = codesOf(name, find) ?? find(name);
  const weight = stored === undefined ? null : classifyTensor(stored, find);
  return weight?.name === name ? weight : undefined;
}

/**
 * Groups stored tensors into logical weights by the public naming conventions, in the order of
 * their first parts. Holds a map of names for the duration; a checkpoint has its own, and
 * `logicalTensors` with it makes one weight at a time.
 */
export function detectLogicalTensors(tensors: readonly TensorInfo[]): LogicalTensor[] {
  const index = new Map(tensors.map((t) => [t.name, t]));
  return [...logicalTensors(tensors, (name) => index.get(name))];
}

/**
 * The name a stacked weight (three or more dimensions, matrices [out, in] stacked, as gpt-oss stores
 * its experts) takes in another format. gpt-oss's MXFP4 `experts.down_proj_blocks` hold [experts,
 * out, in], but Hugging Face's bf16 `experts.down_proj` holds [experts, in, out]: the same name in
 * bf16 or FP8 would be read transposed, without error where the matrices are square. So such a
 * weight leaves MXFP4 as `<name>.weight` (with `.weight_scale_inv` for FP8), the name of a Linear's
 * [out, in] rows stacked, which no gpt-oss loader takes for its own; and returns to MXFP4 without
 * the suffix. Other weights keep their names.
 */
export function stackedName(name: string, shape: readonly number[], to: "mxfp4" | "other"): string {
  if (shape.length < 3) return name;
  if (to === "mxfp4") return name.endsWith(STACKED_SUFFIX) ? name.slice(0, -STACKED_SUFFIX.length) : name;
  return name.endsWith(STACKED_SUFFIX) ? name : `${name}${STACKED_SUFFIX}`;
}

const STACKED_SUFFIX = ".weight";

/**
 * The weight of `find` that `weight` (of another checkpoint) converts to: the one of its name, or
 * of its stacked name in the other format (see stackedName).
 */
export function counterpart(weight: LogicalTensor, find: FindTensor): LogicalTensor | undefined {
  const same = logicalWeight(weight.name, find);
  if (same !== undefined || weight.shape.length < 3) return same;
  const renamed = weight.name.endsWith(STACKED_SUFFIX)
    ? weight.name.slice(0, -STACKED_SUFFIX.length)
    : `${weight.name}${STACKED_SUFFIX}`;
  const other = logicalWeight(renamed, find);
  // Only a change of format renames: MXFP4 on exactly one side.
  return other !== undefined && (other.kind === "mxfp4") !== (weight.kind === "mxfp4") ? other : undefined;
}

/** Rows of a logical tensor: every dimension but the last, flattened. */
export function logicalRows(tensor: LogicalTensor): { rows: number; cols: number } {
  const cols = tensor.shape.length === 0 ? 1 : (tensor.shape.at(-1) as number);
  return { rows: cols === 0 ? 0 : elementCount(tensor.shape) / cols, cols };
}

/**
 * The same weights read in rows as short as all of them allow, so a comparison or conversion of a
 * 1-D weight, or of one huge row, streams in bounded chunks instead of holding the row whole: a
 * plain weight splits anywhere, MXFP4 and FP8 with [1, 32] scale blocks after each 32 elements
 * (their blocks run along the flattened elements), FP8 with 128x128 tiles not at all. Each view
 * holds the same values in the same order, so element k of one is element k of the other.
 */
export function shortRows(tensors: readonly LogicalTensor[]): LogicalTensor[] {
  const fits = (t: LogicalTensor, length: number) => {
    const { cols } = logicalRows(t);
    if (length === cols) return true;
    if (t.kind === "plain") return elementCount(t.shape) % length === 0;
    const blockCols = t.kind === "mxfp4" ? MXFP4_BLOCK : t.block[0] === 1 ? t.block[1] : Number.NaN;
    return length === blockCols && cols % blockCols === 0;
  };
  const widths = tensors.map((t) => logicalRows(t).cols);
  const length = [1, MXFP4_BLOCK, ...widths].find((l) => l > 0 && tensors.every((t) => fits(t, l)));
  if (length === undefined) return [...tensors];
  return tensors.map((t) => ({ ...t, shape: [elementCount(t.shape) / length, length] }));
}

/**
 * Memory one reader of many row ranges reuses (see readLogicalRows), grown as needed: fresh arrays
 * per range cost more in page faults and garbage collection than decoding them did. Quantized
 * weights are read into a SIMD decoder's memory of their own and decoded there.
 */
export class RowBuffers {
  readonly #decoder = SimdDecoder.create();
  #bytes = new Uint8Array(0);
  #values = new Float32Array(0);

  /** Room to read and decode in place, or undefined where WebAssembly SIMD is unavailable. */
  space(scaleBytes: number, codeBytes: number, values: number): DecodeSpace | undefined {
    return this.#decoder?.space(scaleBytes, codeBytes, values);
  }

  bytes(n: number): Uint8Array {
    if (this.#bytes.length < n) this.#bytes = new Uint8Array(n);
    return this.#bytes.subarray(0, n);
  }

  values(n: number): Float32Array {
    if (this.#values.length < n) this.#values = new Float32Array(n);
    return this.#values.subarray(0, n);
  }
}

/** RowBuffers not in use on this thread: several reads may be waiting on I/O at once. */
const idleBuffers: RowBuffers[] = [];

/** Runs `use` with RowBuffers no one else on this thread uses meanwhile. */
export async function withRowBuffers<T>(
  count: number,
  use: (...buffers: RowBuffers[]) => Promise<T>,
): Promise<T> {
  const taken = Array.from({ length: count }, () => idleBuffers.pop() ?? new RowBuffers());
  try {
    return await use(...taken);
  } finally {
    idleBuffers.push(...taken);
  }
}

/** Float32 values a read without buffers decodes at a time in pooled buffers, so they stay small. */
const POOLED_VALUES = 2 ** 20;

/**
 * Decodes rows [start, end) of a logical tensor to float32, reading only those rows' bytes (and, for
 * 128x128 tiles, the small scale tensor). Every format here decodes exactly to float32, except MXFP4
 * scales of 2^126 and up, whose largest elements overflow float32 as they would any float32 reader.
 * With `buffers`, quantized weights are read and decoded in their memory, and the result is a view
 * of it, valid until they are next used; without, into a new array.
 */
export async function readLogicalRows(
  ck: Checkpoint,
  tensor: LogicalTensor,
  start: number,
  end: number,
  buffers?: RowBuffers,
): Promise<Float32Array> {
  const { rows, cols } = logicalRows(tensor);
  if (
    !(Number.isSafeInteger(start) && Number.isSafeInteger(end) && 0 <= start && start <= end && end <= rows)
  ) {
    throw new BringupError(
      "BAD_RANGE",
      `${ck.tensor(tensor.parts[0]).file}#${tensor.name}: rows [${start}, ${end}) are outside its ${rows} rows.`,
      { subject: `${ck.tensor(tensor.parts[0]).file}#${tensor.name}` },
    );
  }
  const count = (end - start) * cols;
  if (buffers === undefined && tensor.kind !== "plain") {
    const values = new Float32Array(count);
    const step = Math.max(1, Math.floor(POOLED_VALUES / Math.max(1, cols)));
    await withRowBuffers(1, async (pooled) => {
      for (let row = start; row < end; row += step)
        values.set(
          await readLogicalRows(ck, tensor, row, Math.min(end, row + step), pooled),
          (row - start) * cols,
        );
    });
    return values;
  }
  switch (tensor.kind) {
    case "plain": {
      const size = dtypeBytes(tensor.dtype);
      const bytes = await ck.readTensorRange(tensor.parts[0], start * cols * size, end * cols * size);
      return decodeToFloat32(tensor.dtype, bytes, tensor.name);
    }
    case "mxfp4": {
      const groups = cols / MXFP4_BLOCK;
      const [blocksName, scalesName] = tensor.parts;
      const [g0, g1] = [start * groups, end * groups];
      const blockBytes = (g1 - g0) * MXFP4_BLOCK_BYTES;
      const space = buffers?.space(g1 - g0, blockBytes, count);
      const memory = space ? undefined : buffers?.bytes(blockBytes + g1 - g0);
      const blocks = await readMxfp4Codes(
        ck,
        tensor,
        g0,
        g1,
        space?.codes ?? memory?.subarray(0, blockBytes),
      );
      const scales = await ck.readTensorRange(
        scalesName,
        g0,
        g1,
        space?.scales ?? memory?.subarray(blockBytes),
      );
      const subject = `${ck.tensor(blocksName).file}#${tensor.name}`;
      checkMxfp4Scales(scales, subject, g0); // first, so the block named is the tensor's own
      if (space === undefined)
        return dequantizeMxfp4(blocks, scales, undefined, subject, buffers?.values(count));
      space.mxfp4(g1 - g0);
      return space.values;
    }
    case "fp8": {
      if (end <= start) return new Float32Array(0);
      const { first, gridCols, gridRow, scaleStart, scaleEnd } = fp8ScaleRows(tensor, start, end);
      const blockCols = tensor.block[1];
      const space = fp8Fits(cols, blockCols)
        ? buffers?.space(scaleEnd - scaleStart, count, count)
        : undefined;
      if (space !== undefined) {
        await ck.readTensorRange(tensor.parts[1], scaleStart, scaleEnd, space.scales); // float32 as stored
        await ck.readTensorRange(tensor.parts[0], start * cols, end * cols, space.codes);
        for (let row = start; row < end; row += 1)
          space.fp8Row((row - start) * cols, cols, blockCols, (gridRow(row) - first) * gridCols);
        return space.values;
      }
      const codes = await ck.readTensorRange(
        tensor.parts[0],
        start * cols,
        end * cols,
        buffers?.bytes(count),
      );
      const values = buffers?.values(count) ?? new Float32Array(count);
      await decodeFp8Rows(ck, tensor, start, end, codes, values);
      return values;
    }
  }
}

/** The scale-grid rows that rows [start, end) of an FP8 weight use, and where their bytes lie. */
export function fp8ScaleRows(tensor: LogicalTensor & { kind: "fp8" }, start: number, end: number) {
  const { cols } = logicalRows(tensor);
  const matrixRows = tensor.shape.at(-2) as number;
  const [blockRows, blockCols] = tensor.block;
  const gridCols = Math.ceil(cols / blockCols);
  const gridRowsPerMatrix = Math.ceil(matrixRows / blockRows);
  const gridRow = (row: number) =>
    Math.floor(row / matrixRows) * gridRowsPerMatrix + Math.floor((row % matrixRows) / blockRows);
  const first = gridRow(start);
  const last = gridRow(end - 1) + 1;
  return { first, gridCols, gridRow, scaleStart: first * gridCols * 4, scaleEnd: last * gridCols * 4 };
}

/** Scalar FP8 decoding of rows [start, end) whose codes are read, into float32 or (exactly) float64. */
async function decodeFp8Rows(
  ck: Checkpoint,
  tensor: LogicalTensor & { kind: "fp8" },
  start: number,
  end: number,
  codes: Uint8Array,
  values: Float32Array | Float64Array,
): Promise<void> {
  const { cols } = logicalRows(tensor);
  const { first, gridCols, gridRow, scaleStart, scaleEnd } = fp8ScaleRows(tensor, start, end);
  const scaleBytes = await ck.readTensorRange(tensor.parts[1], scaleStart, scaleEnd);
  const scaleInv = decodeToFloat32("F32", scaleBytes, tensor.parts[1]);
  for (let row = start; row < end; row += 1) {
    const offset = (row - start) * cols;
    decodeScaledRow(
      codes,
      values,
      offset,
      cols,
      tensor.block[1],
      scaleInv,
      (gridRow(row) - first) * gridCols,
    );
  }
}

/**
 * Rows [start, end) decoded to float64, where nothing here overflows or rounds (an MXFP4 element
 * times 2^127, FP8 times a large float32 scale, F64): what a comparison falls back to where float32
 * shows an infinity. Plain scalar code, as it runs only on such rare rows.
 */
export async function readLogicalRowsWide(
  ck: Checkpoint,
  tensor: LogicalTensor,
  start: number,
  end: number,
): Promise<Float64Array> {
  const { cols } = logicalRows(tensor);
  const count = (end - start) * cols;
  switch (tensor.kind) {
    case "plain": {
      const size = dtypeBytes(tensor.dtype);
      const bytes = await ck.readTensorRange(tensor.parts[0], start * cols * size, end * cols * size);
      if (tensor.dtype === "F64") return new Float64Array(bytes.slice().buffer);
      return Float64Array.from(decodeToFloat32(tensor.dtype, bytes, tensor.name));
    }
    case "mxfp4": {
      const groups = cols / MXFP4_BLOCK;
      const [g0, g1] = [start * groups, end * groups];
      const blocks = await readMxfp4Codes(ck, tensor, g0, g1);
      const scales = await ck.readTensorRange(tensor.parts[1], g0, g1);
      checkMxfp4Scales(scales, `${ck.tensor(tensor.parts[0]).file}#${tensor.name}`, g0);
      const e2m1 = decodeTable(FP4_E2M1);
      const values = new Float64Array(count);
      for (let b = 0; b < scales.length; b += 1) {
        const scale = decodeE8m0(scales[b] as number);
        for (let j = 0; j < MXFP4_BLOCK_BYTES; j += 1) {
          const byte = blocks[b * MXFP4_BLOCK_BYTES + j] as number;
          values[b * MXFP4_BLOCK + 2 * j] = (e2m1[byte & 15] as number) * scale;
          values[b * MXFP4_BLOCK + 2 * j + 1] = (e2m1[byte >> 4] as number) * scale;
        }
      }
      return values;
    }
    case "fp8": {
      const values = new Float64Array(count);
      if (count > 0)
        await decodeFp8Rows(
          ck,
          tensor,
          start,
          end,
          await ck.readTensorRange(tensor.parts[0], start * cols, end * cols),
          values,
        );
      return values;
    }
  }
}

/**
 * One row of FP8 E4M3 codes decoded and scaled in one pass, where the SIMD decoder does not run (no
 * WebAssembly SIMD, or rows not in whole vectors), a block's run of columns at a time
 * under its one scale (scales[first + k] for the k-th block). Its own function, so V8 optimizes
 * the loop apart from the async reader around it.
 */
export function decodeScaledRow(
  codes: Uint8Array,
  values: Float32Array | Float64Array,
  offset: number,
  cols: number,
  blockCols: number,
  scales: Float32Array,
  first: number,
): void {
  const table = codeTable("F8_E4M3");
  for (let c0 = 0, g = first; c0 < cols; c0 += blockCols, g += 1) {
    const scale = scales[g] as number;
    const stop = offset + Math.min(cols, c0 + blockCols);
    for (let i = offset + c0; i < stop; i += 1) values[i] = (table[codes[i] as number] as number) * scale;
  }
}

/** The whole logical tensor as float32: what a model loader wants. */
export function readLogicalTensor(ck: Checkpoint, tensor: LogicalTensor): Promise<Float32Array> {
  return readLogicalRows(ck, tensor, 0, logicalRows(tensor).rows);
}

/** Finds a logical tensor by name, saying what is there when it is not. */
export function findLogical(tensors: readonly LogicalTensor[], name: string, where: string): LogicalTensor {
  const found = tensors.find((t) => t.name === name);
  if (found === undefined) {
    throw new BringupError("TENSOR_NOT_FOUND", `${where}: no weight named ${JSON.stringify(name)}.`, {
      subject: `${where}#${name}`,
    });
  }
  return found;
}
