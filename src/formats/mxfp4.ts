import { BringupError } from "../common/errors.js";
import { simdDecoder } from "./decode-simd.js";
import { decodeE8m0, E8M0_NAN, e8m0Table, encodeE8m0Exponent } from "./e8m0.js";
import { decodeTable, FP4_E2M1 } from "./minifloat.js";

/**
 * MXFP4 as the OCP Microscaling spec and the public MXFP4 checkpoints store it: blocks of 32 E2M1
 * elements packed two per byte (element 2i in the low nibble, 2i+1 in the high nibble), 16 bytes per
 * block, and one E8M0 scale per block. A weight W of shape [..., R, C] is stored as `W_blocks` u8
 * [..., R, C/32, 16] and `W_scales` u8 [..., R, C/32].
 */
export const MXFP4_BLOCK = 32;
export const MXFP4_BLOCK_BYTES = 16;
/** E2M1 has emax 2 (its largest value is 6 = 1.5 * 2^2); the spec's scale is 2^(floor(log2(amax)) - 2). */
const E2M1_EMAX = 2;

const E2M1_VALUES = decodeTable(FP4_E2M1);
const SCALES = e8m0Table();

export interface Mxfp4Tensor {
  readonly blocks: Uint8Array;
  readonly scales: Uint8Array;
}

/** The logical shape of a weight stored as `*_blocks` with shape [..., groups, 16]. */
export function mxfp4LogicalShape(blocksShape: readonly number[]): number[] {
  const last = blocksShape[blocksShape.length - 1];
  const groups = blocksShape[blocksShape.length - 2];
  if (blocksShape.length < 2 || last !== MXFP4_BLOCK_BYTES || groups === undefined) {
    throw new BringupError(
      "MXFP4_BAD_SHAPE",
      `MXFP4 blocks must have shape [..., groups, 16]; got [${blocksShape.join(", ")}].`,
    );
  }
  return [...blocksShape.slice(0, -2), groups * MXFP4_BLOCK];
}

function checkPair(blocks: Uint8Array, scales: Uint8Array, subject?: string): void {
  if (blocks.length !== scales.length * MXFP4_BLOCK_BYTES) {
    throw new BringupError(
      "MXFP4_BAD_SHAPE",
      `${subject ?? "MXFP4 tensor"}: ${blocks.length} block bytes do not match ${scales.length} scales (16 bytes per scale).`,
      { subject },
    );
  }
}

/** Throws naming the first block whose scale is the E8M0 NaN code. */
export function checkMxfp4Scales(scales: Uint8Array, subject?: string, firstBlock = 0): void {
  // Buffer's indexOf is a memchr, 10-20x faster than a typed array's, most of all over shared memory.
  const at = Buffer.from(scales.buffer, scales.byteOffset, scales.byteLength).indexOf(E8M0_NAN);
  if (at >= 0) {
    throw new BringupError(
      "MXFP4_NAN_SCALE",
      `${subject ?? "MXFP4 tensor"}: block ${firstBlock + at} has the NaN scale 0xFF; the checkpoint is corrupt or not MXFP4.`,
      { subject },
    );
  }
}

/**
 * Decodes to float32, into `into` when given (32 values per block). `shape`, when given, is the
 * blocks tensor's shape and is checked against the data.
 */
export function dequantizeMxfp4(
  blocks: Uint8Array,
  scales: Uint8Array,
  shape?: readonly number[],
  subject?: string,
  into?: Float32Array,
): Float32Array {
  checkPair(blocks, scales, subject);
  if (shape !== undefined) {
    const logical = mxfp4LogicalShape(shape);
    const count = logical.reduce((a, b) => a * b, 1);
    if (count !== scales.length * MXFP4_BLOCK) {
      throw new BringupError(
        "MXFP4_BAD_SHAPE",
        `${subject ?? "MXFP4 tensor"}: shape [${shape.join(", ")}] does not match ${scales.length} blocks.`,
        { subject },
      );
    }
  }
  checkMxfp4Scales(scales, subject);
  const out = into ?? new Float32Array(scales.length * MXFP4_BLOCK);
  const decoder = simdDecoder();
  if (decoder === undefined) dequantizeMxfp4Scalar(blocks, scales, out);
  else decoder.mxfp4(blocks, scales, out);
  return out;
}

/** dequantizeMxfp4's loop where WebAssembly SIMD is unavailable; decode-simd.ts gives the same values. */
export function dequantizeMxfp4Scalar(blocks: Uint8Array, scales: Uint8Array, out: Float32Array): void {
  for (let b = 0; b < scales.length; b += 1) {
    const scale = SCALES[scales[b] as number] as number;
    const base = b * MXFP4_BLOCK_BYTES;
    const outBase = b * MXFP4_BLOCK;
    for (let j = 0; j < MXFP4_BLOCK_BYTES; j += 1) {
      const byte = blocks[base + j] as number;
      out[outBase + 2 * j] = (E2M1_VALUES[byte & 15] as number) * scale;
      out[outBase + 2 * j + 1] = (E2M1_VALUES[byte >> 4] as number) * scale;
    }
  }
}

/**
 * The E2M1 code nearest to a magnitude already divided by the block scale, ties to even, saturating
 * at 6 as the spec's element conversion does. Written as thresholds because it runs per element.
 */
export function e2m1MagnitudeCode(a: number): number {
  if (a <= 0.25) return 0;
  if (a < 0.75) return 1;
  if (a <= 1.25) return 2;
  if (a < 1.75) return 3;
  if (a <= 2.5) return 4;
  if (a < 3.5) return 5;
  if (a <= 5) return 6;
  return 7;
}

/** floor(log2(a)) of a positive finite double, exactly. */
function exponentOf(a: number): number {
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  else if (2 ** (e + 1) <= a) e += 1;
  return e;
}

/**
 * The spec's scale for a block whose largest magnitude is `amax` (finite): the E8M0 code of
 * 2^(floor(log2(amax)) - 2), clamped to the E8M0 range; code 0 for an all-zero block.
 */
export function mxfp4ScaleCode(amax: number): number {
  return amax === 0 ? 0 : encodeE8m0Exponent(exponentOf(amax) - E2M1_EMAX);
}

/**
 * Encodes along the last dimension in blocks of 32 with the spec's scale choice: the shared exponent
 * is floor(log2(amax)) - 2, clamped to the E8M0 range; elements are value / scale rounded to nearest
 * even and saturated to ±6. An all-zero block gets the smallest scale (code 0).
 */
export function encodeMxfp4(values: Float32Array | readonly number[], subject?: string): Mxfp4Tensor {
  if (values.length % MXFP4_BLOCK !== 0) {
    throw new BringupError(
      "MXFP4_BAD_SHAPE",
      `${subject ?? "tensor"}: ${values.length} values are not a whole number of 32-element blocks; MXFP4 needs the last dimension to be a multiple of 32.`,
      { subject },
    );
  }
  const blockCount = values.length / MXFP4_BLOCK;
  const blocks = new Uint8Array(blockCount * MXFP4_BLOCK_BYTES);
  const scales = new Uint8Array(blockCount);
  for (let b = 0; b < blockCount; b += 1) {
    const start = b * MXFP4_BLOCK;
    let amax = 0;
    for (let i = 0; i < MXFP4_BLOCK; i += 1) {
      const v = values[start + i] as number;
      if (!Number.isFinite(v)) {
        throw new BringupError(
          "MXFP4_NOT_FINITE",
          `${subject ?? "tensor"}: element ${start + i} is ${v}; MXFP4 cannot encode NaN or infinity.`,
          { subject },
        );
      }
      amax = Math.max(amax, Math.abs(v));
    }
    const code = mxfp4ScaleCode(amax);
    scales[b] = code;
    const scale = decodeE8m0(code);
    for (let j = 0; j < MXFP4_BLOCK_BYTES; j += 1) {
      const lo = values[start + 2 * j] as number;
      const hi = values[start + 2 * j + 1] as number;
      const loCode = e2m1MagnitudeCode(Math.abs(lo) / scale) | (lo < 0 || Object.is(lo, -0) ? 8 : 0);
      const hiCode = e2m1MagnitudeCode(Math.abs(hi) / scale) | (hi < 0 || Object.is(hi, -0) ? 8 : 0);
      blocks[b * MXFP4_BLOCK_BYTES + j] = loCode | (hiCode << 4);
    }
  }
  return { blocks, scales };
}
