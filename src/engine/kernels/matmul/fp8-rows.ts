import { instantiateWasm, type WasmMemory, type WasmModule } from "../../../common/wasm-runtime.js";

/**
 * Where an FP8 chunk's scales are, as matmul/fp8-rows.wat's kernels take them: the chunk's first
 * scale row, the bytes of one, blocks of 32 values a scale, rows a band and the chunk's first row
 * into its band.
 */
export type Fp8Scales = [
  scales: number,
  scaleRowBytes: number,
  blocksPerScale: number,
  blockRows: number,
  band0: number,
];

/**
 * The scales of the chunk of a [N, K] FP8 weight from row c0, its scale blocks blockRows x
 * blockCols (a multiple of 32) at byte `scales` (or their folded copy, WeightParts' fp8FoldedScales).
 */
export function fp8ScalesAt(
  K: number,
  blockRows: number,
  blockCols: number,
  scales: number,
  c0: number,
): Fp8Scales {
  const scaleRowBytes = Math.ceil(K / blockCols) * 4;
  const at = scales + Math.floor(c0 / blockRows) * scaleRowBytes;
  return [at, scaleRowBytes, blockCols / 32, blockRows, c0 % blockRows];
}

/** matmul/fp8-rows.wat's fp8 (see there for the arguments). */
export type Fp8Dot = (
  K: number,
  M: number,
  x: number,
  codes: number,
  ...rest: [...Fp8Scales, acc: number, o: number, N: number, ldo: number]
) => void;

/**
 * One code order's matmul/fp8-rows.wat kernels: its decode into scratch and its fp8, which
 * decodes straight into the multiply-adds (see there for the arguments), and fp8's `.nan-free`
 * build, for weights without NaN's codes; with the `fp8=scaled` switch also the `.scaled` builds'
 * fp8 (both), which take scaleInput's input (else null).
 */
export interface Fp8Kernels {
  decode: (K: number, codes: number, ...rest: [...Fp8Scales, out: number, N: number]) => void;
  rows: Fp8Dot;
  rowsNanFree: Fp8Dot;
  scaleInput: (K: number, M: number, x: number, scales: number, blocksPerScale: number, out: number) => void;
  scaled: { readonly rows: Fp8Dot; readonly rowsNanFree: Fp8Dot } | null;
}

/**
 * The FP8 kernels for codes in file order, in lanes order (formats/fp8-lanes.ts, the `.lanes`
 * builds) and in quads order (formats/fp8-quads.ts, the `.quads` builds: chunks of whole groups of
 * four rows from a multiple of four) as Weight.fp8Order says, and from how many input rows a
 * matmul takes the decode into scratch for the tile (as Mxfp4Rows').
 */
export interface Fp8Rows {
  readonly file: Fp8Kernels;
  readonly lanes: Fp8Kernels;
  readonly quads: Fp8Kernels;
  readonly scratchTokens: number;
}

/** One code order's compiled fp8-rows build and its `.nan-free` build (and their `.scaled` ones, with fp8=scaled). */
export interface Fp8Builds {
  readonly module: WasmModule;
  readonly nanFree: WasmModule;
  readonly scaled?: { readonly module: WasmModule; readonly nanFree: WasmModule };
}

/** The compiled FP8 kernels a pool runs: both code orders' builds (see Fp8Rows). */
export interface Fp8Modules {
  readonly file: Fp8Builds;
  readonly lanes: Fp8Builds;
  readonly quads: Fp8Builds;
  readonly scratchTokens: number;
}

/** The FP8 kernels over `memory`. */
export function instantiateFp8Rows(modules: Fp8Modules, memory: WasmMemory): Fp8Rows {
  const dot = (module: WasmModule) => (instantiateWasm(module, memory) as { fp8: Fp8Dot }).fp8;
  const kernels = ({ module, nanFree, scaled }: Fp8Builds): Fp8Kernels => {
    const { decode, fp8, scaleInput } = instantiateWasm(module, memory) as {
      decode: Fp8Kernels["decode"];
      fp8: Fp8Dot;
      scaleInput: Fp8Kernels["scaleInput"];
    };
    return {
      decode,
      rows: fp8,
      rowsNanFree: dot(nanFree),
      scaleInput,
      scaled: scaled === undefined ? null : { rows: dot(scaled.module), rowsNanFree: dot(scaled.nanFree) },
    };
  };
  return {
    file: kernels(modules.file),
    lanes: kernels(modules.lanes),
    quads: kernels(modules.quads),
    scratchTokens: modules.scratchTokens,
  };
}

/**
 * An FP8 weight in the shared memory as a matmul reads it (matmul-kernel.ts's WeightParts, whose
 * fields these are): byte offsets of its codes, its scales and their folded copy
 * (fp8-folded-scales.ts; -1: none), its scale blocks, whether it has no NaN code, its code order.
 */
export interface Fp8Weight {
  readonly offset: number;
  readonly scalesOffset: number;
  readonly fp8FoldedScales: number;
  readonly scaleBlockRows: number;
  readonly scaleBlockCols: number;
  readonly fp8NanFree: boolean;
  readonly fp8Order: "file" | "lanes" | "quads";
}

/**
 * Whether `fp8=scaled` applies to a weight of `rows` rows with scale blocks blockRows x blockCols:
 * bands of at least 128 rows (in whole groups of four), or one band for the whole weight, that
 * share a scale row, so scaleInput's K multiplies a band are next to nothing beside its weights
 * (1x32 blocks would scale the input again for every row).
 */
export function fp8ScaledFits(rows: number, blockRows: number, blockCols: number): boolean {
  return blockCols % 32 === 0 && (blockRows >= rows || (blockRows >= 128 && blockRows % 4 === 0));
}

/** Input rows up to which the scaled form runs: its input lies in the matmul's scratch rows area (64 rows). */
export const FP8_SCALED_MAX_M = 16;

/** An FP8 matmul's kernels over one range of rows, each over the chunk of `rows` rows from row c0. */
export interface Fp8Step {
  /** The chunk decoded into scratch at byte `out` (the table decoding's exact values), for the tile. */
  decode(c0: number, out: number, rows: number): void;
  /**
   * The chunk dotted with M input rows at x, decoded straight into the multiply-adds; null below a
   * switch's scratchTokens rows or without a folded copy. acc is 128 bytes of scratch, followed by
   * inputBytes more for the scaled form's input.
   */
  readonly inLoop:
    | ((M: number, x: number, c0: number, acc: number, o: number, rows: number, ldo: number) => void)
    | null;
  readonly inputBytes: number;
}

/**
 * The FP8 kernels for rows [n0, n1) of `w` [N, K] at M input rows, for the weight's code order; null
 * where they do not apply: scale blocks not of whole groups of 32, or codes in quads order over a
 * range not of whole groups of four rows (which no dispatch makes: such rows are unpacked instead).
 */
export function fp8Step(
  rows: Fp8Rows,
  w: Fp8Weight,
  K: number,
  M: number,
  n0: number,
  n1: number,
  N: number,
): Fp8Step | null {
  const { offset, scalesOffset, fp8FoldedScales, scaleBlockRows, scaleBlockCols, fp8Order } = w;
  if (K % 32 !== 0 || scaleBlockCols % 32 !== 0 || (fp8Order === "quads" && (n0 % 4 !== 0 || n1 % 4 !== 0)))
    return null;
  const kernels = rows[fp8Order];
  const decode = (c0: number, out: number, n: number) =>
    kernels.decode(
      K,
      offset + c0 * K,
      ...fp8ScalesAt(K, scaleBlockRows, scaleBlockCols, scalesOffset, c0),
      out,
      n,
    );
  if (M >= rows.scratchTokens || fp8FoldedScales < 0) return { decode, inLoop: null, inputBytes: 0 };
  const folded = (c0: number) => fp8ScalesAt(K, scaleBlockRows, scaleBlockCols, fp8FoldedScales, c0);
  const scaled =
    M <= FP8_SCALED_MAX_M && fp8ScaledFits(N, scaleBlockRows, scaleBlockCols) ? kernels.scaled : null;
  if (scaled === null) {
    const dot = w.fp8NanFree ? kernels.rowsNanFree : kernels.rows;
    return {
      decode,
      inLoop: (m, x, c0, acc, o, n, ldo) => dot(K, m, x, offset + c0 * K, ...folded(c0), acc, o, n, ldo),
      inputBytes: 0,
    };
  }
  // fp8=scaled: each band's rows in one call, over the input times the band's scales (scaleInput).
  const dot = w.fp8NanFree ? scaled.rowsNanFree : scaled.rows;
  const [, scaleRowBytes, blocksPerScale] = folded(0);
  return {
    decode,
    inLoop: (m, x, c0, acc, o, n, ldo) => {
      const input = acc + 128;
      for (let r0 = c0; r0 < c0 + n; ) {
        const band = Math.floor(r0 / scaleBlockRows);
        const r1 = Math.min(c0 + n, (band + 1) * scaleBlockRows);
        const scales = fp8FoldedScales + band * scaleRowBytes;
        kernels.scaleInput(K, m, x, scales, blocksPerScale, input);
        const codes = offset + r0 * K;
        const out = o + (r0 - c0) * 4;
        dot(
          K,
          m,
          input,
          codes,
          scales,
          scaleRowBytes,
          blocksPerScale,
          scaleBlockRows,
          r0 % scaleBlockRows,
          acc,
          out,
          r1 - r0,
          ldo,
        );
        r0 = r1;
      }
    },
    inputBytes: M * K * 4,
  };
}
