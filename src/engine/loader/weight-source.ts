import { BringupError } from "../../common/errors.js";
import { decodeToFloat32, HALVES_BLOCKS_SUFFIX, MXFP4_HALVES } from "../../formats/index.js";
import { relayToLanes, relayToQuads } from "../kernels/matmul/fp8-relayout.js";
import { fp8ScaledFits } from "../kernels/matmul/fp8-rows.js";
import { weightAt } from "../kernels/reference.js";
import { fromRowQuads, inRowQuads, tileLayout } from "../tensor/row-quads.js";
import { checkWeight, shareArray, type Weight } from "../tensor/weight.js";
import { type HostTensor, halvesHostTensor, type TensorLookup } from "./host-tensor.js";

/**
 * A checkpoint's tensors as model code reads them: by their public names, each shape checked
 * against what the config implies, each read recorded so the loader can refuse tensors no block
 * used. `source` names the checkpoint in errors.
 */
export class WeightSource {
  private readonly used = new Set<string>();
  private mxfp4 = false;
  /** The scale blocks ("128x128", "1x32") of the block-scaled FP8 matrices read so far. */
  private readonly fp8Blocks = new Set<string>();
  /** Whether fp8=scaled takes every one of them (fp8ScaledFits). */
  private fp8ScaledFits = true;
  /** The source a renamed view reads through (see `renamed`). */
  private parent: WeightSource | undefined;

  constructor(
    private readonly lookup: TensorLookup,
    readonly names: readonly string[],
    readonly source: string,
  ) {}

  /** Whether the checkpoint has `name` (not recorded as used). */
  has(name: string): boolean {
    return this.lookup(name) !== undefined;
  }

  /** The stored shape of `name`, or undefined when the checkpoint has no such tensor (not recorded as used). */
  shape(name: string): readonly number[] | undefined {
    return this.lookup(name)?.shape;
  }

  /**
   * The matrix `<base>.weight` [rows, cols] in its stored dtype (f32, bf16, f16, FP8 with its
   * `weight_scale_inv` / `weight_scale`, or MXFP4 as `<base>.weight_blocks` / `_scales`).
   */
  matrix(base: string, rows: number, cols: number): Weight {
    const w = toWeight(base, rows, cols, this.recordingLookup, (n) => this.need(n), this.source);
    if (w.dtype === "mxfp4") this.markMxfp4();
    this.markFp8(w);
    return w;
  }

  /** Whether any matrix read so far is MXFP4 (the model then has the `mxfp4` switch). */
  get readMxfp4(): boolean {
    return this.mxfp4;
  }

  /**
   * The scale blocks of the block-scaled FP8 matrices read so far (any: the model has the `fp8`
   * switch), and whether fp8=scaled takes every one of them.
   */
  get readFp8(): { readonly blocks: readonly string[]; readonly scaledFits: boolean } {
    return { blocks: [...this.fp8Blocks], scaledFits: this.fp8ScaledFits };
  }

  /**
   * `count` matrices [rows, cols] stacked in one tensor, as gpt-oss stores its experts: MXFP4
   * `<base>_blocks` [count, rows, cols/32, 16] with `<base>_scales` [count, rows, cols/32]; FP8
   * E4M3 `<base>` [count, rows, cols] with block scales `<base>_scale_inv` [count, ...grid] (what
   * `weights convert --to fp8` writes from MXFP4: a grid of [rows, cols/32] for 1x32 blocks); or a
   * plain `<base>` [count, rows, cols] in f32. Each matrix is a view of its slice, not a copy.
   */
  stackedMatrices(base: string, count: number, rows: number, cols: number): Weight[] {
    const codes = mxfp4Codes(base, this.recordingLookup);
    if (codes !== undefined) {
      const { blocks, name: blocksName, order } = codes;
      const scales = this.need(`${base}_scales`);
      expectShape(blocks, blocksName, [count, rows, cols / 32, 16], this.source);
      expectShape(scales, `${base}_scales`, [count, rows, cols / 32], this.source);
      checkMxScales(scales, `${base}_scales`, this.source);
      this.markMxfp4();
      const data = share(blocks.data as Uint8Array);
      const mxScales = share(scales.data as Uint8Array);
      const bytes = (rows * cols) / 2;
      const groups = (rows * cols) / 32;
      return Array.from({ length: count }, (_, e) => {
        const w: Weight = {
          dtype: "mxfp4",
          rows,
          cols,
          data: data.subarray(e * bytes, (e + 1) * bytes),
          mxScales: mxScales.subarray(e * groups, (e + 1) * groups),
          ...order,
        };
        checkWeight(w, `${base}[${e}]`);
        return w;
      });
    }
    // Converted from MXFP4 to another format, a stacked weight is `<base>.weight` [count, rows,
    // cols]: under gpt-oss's own name, bf16 loaders would read it transposed (formats' stackedName).
    const name = this.has(base) || !this.has(`${base}.weight`) ? base : `${base}.weight`;
    const t = this.need(name);
    expectShape(t, name, [count, rows, cols], this.source);
    if (t.dtype === "F8_E4M3") {
      const scaleName = `${name}_scale_inv`;
      const s = this.need(scaleName);
      const grid = fp8ScaleGrid(s, scaleName, rows, cols, this.source, count);
      const scales = share(checkFp8Scales(s, scaleName, this.source));
      const { data: codes, ...order } = fp8Codes(t, rows, cols);
      const perMatrix = grid.rows * grid.cols;
      return Array.from({ length: count }, (_, e) => {
        const w: Weight = {
          dtype: "fp8_e4m3",
          rows,
          cols,
          data: codes.subarray(e * rows * cols, (e + 1) * rows * cols),
          scale: { ...grid.blocks, data: scales.subarray(e * perMatrix, (e + 1) * perMatrix) },
          ...order,
        };
        checkWeight(w, `${name}[${e}]`);
        this.markFp8(w);
        return w;
      });
    }
    if (t.dtype === "BF16") {
      const bits = share(t.data as Uint16Array);
      return Array.from({ length: count }, (_, e) => ({
        dtype: "bf16" as const,
        rows,
        cols,
        data: bits.subarray(e * rows * cols, (e + 1) * rows * cols),
      }));
    }
    if (t.dtype !== "F32") {
      throw new BringupError(
        "MODEL_WEIGHT_DTYPE",
        `${this.source}: ${name} has dtype ${t.dtype}; stacked expert weights are read as MXFP4 blocks, FP8 E4M3 with block scales, BF16 or F32.`,
        { subject: name },
      );
    }
    // Laid out in row quads where the tile reads it in place (once per tensor; row-quads.ts).
    const data = share(t.data as Float32Array);
    const layout = tileLayout(data, rows, cols, count, name);
    return Array.from({ length: count }, (_, e) => ({
      dtype: "f32" as const,
      rows,
      cols,
      data: data.subarray(e * rows * cols, (e + 1) * rows * cols),
      ...layout,
    }));
  }

  /**
   * The vector `name` of `length` values, decoded to f32, where the kernels read in place (as
   * `tensor`'s).
   */
  vector(name: string, length: number): Float32Array {
    return share(toVector(this.need(name), name, length, this.source));
  }

  /**
   * A tensor of exactly `shape`, decoded to f32 (row-major), in the shared memory where it fits, so
   * the kernels read it in place (a block's bias added by vector-ops' SIMD form).
   */
  tensor(name: string, shape: readonly number[]): Float32Array {
    const t = this.need(name);
    expectShape(t, name, shape, this.source);
    if (t.dtype === "F8_E4M3" && shape.length === 2 && name.endsWith(".weight")) {
      // A linear stored in FP8 with its block scales (DeepSeek-V4's wo_a) that a block reads in
      // f32: each value decoded and scaled as the FP8 matmul does, so exactly for the power-of-two
      // (E8M0) scales DeepSeek ships.
      const [rows, cols] = shape as [number, number];
      const w = this.matrix(name.slice(0, -".weight".length), rows, cols);
      const out = new Float32Array(rows * cols);
      for (let n = 0; n < rows; n++) for (let k = 0; k < cols; k++) out[n * cols + k] = weightAt(w, n, k);
      return out;
    }
    return share(toFloat32(t, name));
  }

  /**
   * The integer tensor `name` of exactly `shape` (I32 or I64, as DeepSeek-V4's hash-routing
   * table), as int32; a value past int32 is refused naming the tensor.
   */
  indices(name: string, shape: readonly number[]): Int32Array {
    const t = this.need(name);
    expectShape(t, name, shape, this.source);
    const bytes = t.data as Uint8Array;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const n = shape.reduce((a, b) => a * b, 1);
    const out = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const v =
        t.dtype === "I32"
          ? view.getInt32(4 * i, true)
          : t.dtype === "I64"
            ? Number(view.getBigInt64(8 * i, true))
            : Number.NaN;
      if (!(v >= -(2 ** 31) && v < 2 ** 31)) {
        throw new BringupError(
          "MODEL_WEIGHTS_INVALID",
          `${this.source}: ${name} must be an I32 or I64 table of ids, but it is ${t.dtype}${Number.isNaN(v) ? "" : ` holding ${v} at index ${i}`}; the checkpoint is not this model's.`,
          { subject: name },
        );
      }
      out[i] = v;
    }
    return out;
  }

  /**
   * This checkpoint as a family reads it when the checkpoint stores some tensors under other names
   * (a port's patch, models/family-patch.ts): `toCheckpoint` maps a name the family asks for to the
   * stored one, `toFamily` the other way. Reads through the view count as reads of the stored
   * tensors here, so `unused` still refuses what no block read.
   */
  renamed(toCheckpoint: (name: string) => string, toFamily: (name: string) => string): WeightSource {
    return this.view((name, read) => read(toCheckpoint(name)), this.names.map(toFamily));
  }

  /**
   * This checkpoint as a family reads it when the checkpoint stores some tensors in another form
   * (DeepSeek-V4's per-expert tensors that the family reads stacked): `lookup` gives the tensor
   * the family asks for by `name`, built from the stored tensors it reads through `read`, each
   * read recorded here (so `unused` still refuses what no block read); `names` are the family's
   * names for the stored tensors.
   */
  view(
    lookup: (name: string, read: TensorLookup) => HostTensor | undefined,
    names: readonly string[],
  ): WeightSource {
    const view = new WeightSource((name) => lookup(name, this.recordingLookup), names, this.source);
    view.parent = this;
    return view;
  }

  private markMxfp4(): void {
    this.mxfp4 = true;
    this.parent?.markMxfp4();
  }

  private markFp8(w: Weight): void {
    if (w.dtype !== "fp8_e4m3" || w.scale === undefined) return;
    const { blockRows, blockCols } = w.scale;
    this.fp8Blocks.add(`${blockRows}x${blockCols}`);
    this.fp8ScaledFits &&= fp8ScaledFits(w.rows, blockRows, blockCols);
    this.parent?.markFp8(w);
  }

  /** Checkpoint tensors no block read, except those `ignored` accepts. */
  unused(ignored: (name: string) => boolean = () => false): string[] {
    return this.names.filter((n) => !this.used.has(n) && !ignored(n));
  }

  private readonly recordingLookup: TensorLookup = (name) => {
    const t = this.lookup(name);
    if (t !== undefined) this.used.add(name);
    return t;
  };

  private need(name: string): HostTensor {
    const t = this.recordingLookup(name);
    if (t === undefined) {
      throw new BringupError(
        "MODEL_WEIGHT_MISSING",
        `${this.source}: tensor ${name} is missing; the checkpoint does not match config.json.`,
        { subject: name },
      );
    }
    return t;
  }
}

function toWeight(
  base: string,
  rows: number,
  cols: number,
  lookup: TensorLookup,
  need: (name: string) => HostTensor,
  source: string,
): Weight {
  // MXFP4 (OCP layout as gpt-oss stores it): `<name>_blocks` [rows, cols/32, 16] of packed E2M1 and
  // `<name>_scales` [rows, cols/32] of E8M0, where <name> is `<base>.weight` or `<base>` itself
  // (or the codes re-laid out in halves order, `<name>_hblocks`).
  const mxName = mxfp4Codes(`${base}.weight`, lookup) !== undefined ? `${base}.weight` : base;
  const codes = mxfp4Codes(mxName, lookup);
  let w: Weight;
  if (codes !== undefined) {
    const { blocks, name: blocksName, order } = codes;
    const scales = need(`${mxName}_scales`);
    expectShape(blocks, blocksName, [rows, cols / 32, 16], source);
    expectShape(scales, `${mxName}_scales`, [rows, cols / 32], source);
    checkMxScales(scales, `${mxName}_scales`, source);
    w = {
      dtype: "mxfp4",
      rows,
      cols,
      data: share(blocks.data as Uint8Array),
      mxScales: share(scales.data as Uint8Array),
      ...order,
    };
  } else {
    const name = `${base}.weight`;
    const t = need(name);
    expectShape(t, name, [rows, cols], source);
    switch (t.dtype) {
      case "F32": {
        const data = share(t.data as Float32Array);
        w = { dtype: "f32", rows, cols, data, ...tileLayout(data, rows, cols, 1, name) };
        break;
      }
      case "BF16":
        w = { dtype: "bf16", rows, cols, data: share(t.data) };
        break;
      case "F16":
        w = { dtype: "f16", rows, cols, data: share(t.data) };
        break;
      case "F8_E4M3": {
        const scaleName = lookup(`${base}.weight_scale_inv`) ? `${name}_scale_inv` : `${name}_scale`;
        const s = lookup(scaleName);
        if (s === undefined) {
          w = { dtype: "fp8_e4m3", rows, cols, ...fp8Codes(t, rows, cols) };
          break;
        }
        const { blocks } = fp8ScaleGrid(s, scaleName, rows, cols, source);
        w = {
          dtype: "fp8_e4m3",
          rows,
          cols,
          ...fp8Codes(t, rows, cols),
          scale: { ...blocks, data: shareArray(checkFp8Scales(s, scaleName, source)) },
        };
        break;
      }
      default:
        throw new BringupError(
          "MODEL_WEIGHT_DTYPE",
          `${source}: ${name} has dtype ${t.dtype}, which a matmul weight cannot have.`,
          { subject: name },
        );
    }
  }
  checkWeight(w, base);
  return w;
}

/**
 * The MXFP4 codes of weight `name`: `<name>_blocks` in OCP order (or in halves order where the
 * loader re-laid them out, HostTensor.mxfp4Order), or `<name>_hblocks` in halves order
 * (formats/mxfp4-halves.ts), with the order a Weight records; undefined where neither is. OCP codes
 * outside the shared memory are copied into it in halves order (the copy `share` would make),
 * so they too are read in the order every MXFP4 kernel reads fastest.
 */
function mxfp4Codes(
  name: string,
  lookup: TensorLookup,
): { blocks: HostTensor; name: string; order: { mxfp4Order?: "halves" } } | undefined {
  const ocp = lookup(`${name}_blocks`);
  if (ocp !== undefined) {
    const codes = ocp.data as Uint8Array;
    const blocks =
      ocp.mxfp4Order === undefined && !(codes.buffer instanceof SharedArrayBuffer)
        ? halvesHostTensor(shareArray(codes), ocp.shape)
        : ocp;
    return {
      blocks,
      name: `${name}_blocks`,
      order: blocks.mxfp4Order === undefined ? {} : { mxfp4Order: MXFP4_HALVES },
    };
  }
  const halvesName = `${name}${HALVES_BLOCKS_SUFFIX}`;
  const halves = lookup(halvesName);
  return halves === undefined
    ? undefined
    : { blocks: halves, name: halvesName, order: { mxfp4Order: MXFP4_HALVES } };
}

/**
 * The block grid of an FP8 matrix's scales: a scalar, or [gridRows, gridCols] (after `count`
 * stacked matrices when given) whose blocks tile the [rows, cols] matrix, each block a power of two
 * or the whole dimension on each side (1x32, 128x128, per row), every block but the last of a row
 * or column whole. Refused naming the scale tensor otherwise.
 */
function fp8ScaleGrid(
  s: HostTensor,
  name: string,
  rows: number,
  cols: number,
  source: string,
  count?: number,
): { rows: number; cols: number; blocks: { blockRows: number; blockCols: number } } {
  const lead = count === undefined ? [] : [count];
  const grid = s.shape.slice(lead.length);
  const scalar = count === undefined && grid.reduce((a, b) => a * b, 1) === 1 && grid.length <= 2;
  const [gridRows, gridCols] = scalar ? [1, 1] : [grid[0] ?? 0, grid[1] ?? 0];
  const blockRows = Math.ceil(rows / gridRows);
  const blockCols = Math.ceil(cols / gridCols);
  const side = (block: number, dim: number, cells: number) =>
    cells > 0 && Math.ceil(dim / block) === cells && (block === dim || (block & (block - 1)) === 0);
  const tiles =
    (scalar || (grid.length === 2 && lead.every((d, i) => s.shape[i] === d))) &&
    side(blockRows, rows, gridRows) &&
    side(blockCols, cols, gridCols);
  if (!tiles) {
    throw new BringupError(
      "MODEL_WEIGHTS_MISMATCH",
      `${source}: ${name} has shape [${s.shape.join(", ")}], which is no grid of scale blocks over ${count === undefined ? "" : `${count} stacked `}[${rows}, ${cols}] matrices (1x32 blocks take [${[...lead, rows, Math.ceil(cols / 32)].join(", ")}]); the checkpoint and config.json do not match.`,
      { subject: name },
    );
  }
  return { rows: gridRows, cols: gridCols, blocks: { blockRows, blockCols } };
}

/** An FP8 scale tensor decoded to f32, refused naming it when a scale is NaN or infinite. */
function checkFp8Scales(s: HostTensor, name: string, source: string): Float32Array {
  const values = toFloat32(s, name);
  const at = values.findIndex((v) => !Number.isFinite(v));
  if (at >= 0) {
    throw new BringupError(
      "MODEL_WEIGHTS_INVALID",
      `${source}: ${name} holds ${values[at]} at index ${at}; an FP8 block scale must be finite (the checkpoint is corrupt).`,
      { subject: name },
    );
  }
  return values;
}

/** MXFP4 scales as stored (E8M0), refused naming the tensor where one is 255, E8M0's NaN. */
function checkMxScales(s: HostTensor, name: string, source: string): void {
  const at = (s.data as Uint8Array).indexOf(255);
  if (at >= 0) {
    throw new BringupError(
      "MODEL_WEIGHTS_INVALID",
      `${source}: ${name} holds 255 (NaN in E8M0) at index ${at}; every 32 values it scales would decode to NaN (the checkpoint is corrupt).`,
      { subject: name },
    );
  }
}

function toVector(t: HostTensor, name: string, length: number, source: string): Float32Array {
  expectShape(t, name, [length], source);
  return toFloat32(t, name);
}

/**
 * Small tensors (norms, biases, scales) are decoded to f32 once at load; an f32 tensor already
 * read as a matrix, and so laid out in row quads, is read back row-major.
 */
function toFloat32(t: HostTensor, name: string): Float32Array {
  if (t.dtype === "F32" && inRowQuads(t.data)) {
    const [rows = 1, cols = 1] = t.shape.slice(-2);
    return fromRowQuads(t.data as Float32Array, rows, cols, t.data.length / (rows * cols));
  }
  if (t.dtype === "F32") return new Float32Array(t.data as Float32Array);
  // E8M0 scales (DeepSeek-V4's FP8 block scales) are powers of two; 255 decodes to NaN.
  if (t.dtype === "F8_E8M0") return decodeToFloat32("F8_E8M0", t.data as Uint8Array, name);
  if (t.dtype === "I32" || t.dtype === "I64" || t.dtype === "I8" || t.dtype === "U8") {
    throw new BringupError(
      "MODEL_WEIGHT_DTYPE",
      `${name} is ${t.dtype}, ${t.dtype === "I32" || t.dtype === "I64" ? "a table of ids" : "packed bytes"}, where a float tensor was expected; the checkpoint is not this model's.`,
      { subject: name },
    );
  }
  const n = t.data.length;
  // FP8 codes in quads order lie by rows of the tensor's last dimension; the rest by position alone.
  const cols = t.fp8Order === "quads" ? (t.shape.at(-1) as number) : n;
  const probe: Weight =
    t.dtype === "BF16"
      ? { dtype: "bf16", rows: 1, cols: n, data: t.data }
      : t.dtype === "F16"
        ? { dtype: "f16", rows: 1, cols: n, data: t.data }
        : { dtype: "fp8_e4m3", rows: n / cols, cols, data: t.data, ...fp8OrderOf(t) };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = weightAt(probe, Math.floor(i / cols), i % cols);
  return out;
}

/** The code order of FP8 codes `t` as a weight records it (HostTensor.fp8Order). */
function fp8OrderOf(t: HostTensor): Pick<Weight, "fp8Order"> {
  return t.fp8Order === undefined ? {} : { fp8Order: t.fp8Order };
}

/**
 * FP8 codes `t` of matrices [rows, cols], in the shared memory, with the order a Weight records:
 * as the loader placed them (in quads or lanes order where it re-laid them, HostTensor.fp8Order);
 * codes outside the shared memory in rows of a multiple of 32 copied into it in quads order (rows
 * a multiple of 4) or lanes order (the copy `share` would make), as mxfp4Codes copies MXFP4's;
 * codes a caller shares as they are.
 */
function fp8Codes(
  t: HostTensor,
  rows: number,
  cols: number,
): { data: Uint8Array } & Pick<Weight, "fp8Order"> {
  const codes = t.data as Uint8Array;
  if (t.fp8Order !== undefined || codes.buffer instanceof SharedArrayBuffer || cols % 32 !== 0)
    return { data: share(codes), ...fp8OrderOf(t) };
  return rows % 4 === 0
    ? { data: relayToQuads(shareArray(codes), cols), fp8Order: "quads" }
    : { data: relayToLanes(shareArray(codes)), fp8Order: "lanes" };
}

function expectShape(t: HostTensor, name: string, shape: readonly number[], source: string): void {
  const same = t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
  if (!same) {
    throw new BringupError(
      "MODEL_WEIGHTS_MISMATCH",
      `${source}: ${name} has shape [${t.shape.join(", ")}] but config.json implies [${shape.join(", ")}].`,
      { subject: name },
    );
  }
}

function share<T extends Float32Array | Uint16Array | Uint8Array>(a: T): T {
  return a.buffer instanceof SharedArrayBuffer ? a : shareArray(a);
}
