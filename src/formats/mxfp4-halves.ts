import { MXFP4_BLOCK_BYTES } from "./mxfp4.js";

/**
 * MXFP4's "halves" code order, the engine's re-layout of MXFP4 weights (`bringup weights convert
 * --to mxfp4 --layout halves`): within each block of 32 values, byte j holds value j in its low
 * nibble and value j + 16 in its high nibble, as ggml's `block_mxfp4` stores them. The OCP order
 * the public checkpoints use packs values 2j and 2j + 1 into byte j instead. Scales are unchanged.
 *
 * Why the engine's fused MXFP4 decode reads it best: the decode splits 16 code bytes into their low
 * and high nibbles, one SIMD operation each. In OCP order those are the even and the odd values,
 * and two shuffles interleave them back into order before the table lookups; in halves order the
 * low nibbles are values 0-15 and the high nibbles 16-31 already, so the shuffles go
 * (engine/kernels/matmul/mxfp4-decode.wat's `.halves` build).
 *
 * Stored names: the codes as `W_hblocks` (U8 [..., groups, 16], as `W_blocks`) beside `W_scales`,
 * so no reader that knows only `W_blocks` takes them for OCP order; config.json says
 * `"mxfp4_layout": "halves"`.
 */
export const HALVES_BLOCKS_SUFFIX = "_hblocks";
/** The config.json key that names a checkpoint's MXFP4 code order, and the one value it may take. */
export const MXFP4_LAYOUT_KEY = "mxfp4_layout";
export const MXFP4_HALVES = "halves";

/** OCP-ordered MXFP4 code bytes (whole blocks of 16) in halves order, into a new array. */
export function toHalves(blocks: Uint8Array): Uint8Array {
  const out = new Uint8Array(blocks.length);
  for (let at = 0; at < blocks.length; at += MXFP4_BLOCK_BYTES) {
    for (let j = 0; j < MXFP4_BLOCK_BYTES; j += 1) {
      // Value j is byte j >> 1's nibble j & 1; value j + 16 is byte 8 + (j >> 1)'s.
      const low = nibble(blocks[at + (j >> 1)] as number, j & 1);
      const high = nibble(blocks[at + 8 + (j >> 1)] as number, j & 1);
      out[at + j] = low | (high << 4);
    }
  }
  return out;
}

/** Halves-ordered MXFP4 code bytes back in OCP order, in place (the inverse of toHalves). */
export function fromHalvesInPlace(blocks: Uint8Array): Uint8Array {
  const block = new Uint8Array(MXFP4_BLOCK_BYTES);
  for (let at = 0; at < blocks.length; at += MXFP4_BLOCK_BYTES) {
    block.set(blocks.subarray(at, at + MXFP4_BLOCK_BYTES));
    for (let j = 0; j < MXFP4_BLOCK_BYTES; j += 1) {
      // Values 2j and 2j + 1: both in the low nibbles below j = 8, both in the high ones from it.
      const half = j >> 3;
      const even = 2 * j - 16 * half;
      blocks[at + j] = nibble(block[even] as number, half) | (nibble(block[even + 1] as number, half) << 4);
    }
  }
  return blocks;
}

function nibble(byte: number, high: number): number {
  return high === 0 ? byte & 15 : byte >> 4;
}
