/**
 * MXFP4's "halves" code order, the engine's re-layout of MXFP4 weights (`bringup weights convert
 * --to mxfp4 --layout halves`): within each block of 32 values, byte i holds value v(i) in its low
 * nibble and value v(i) + 16 in its high one, where v = 0 4 1 5 2 6 3 7 8 12 9 13 10 14 11 15
 * (HALVES_ORDER). The OCP order the public checkpoints use packs values 2i and 2i + 1 into byte i
 * instead. Scales are unchanged.
 *
 * Why the engine's fused MXFP4 decode reads it best (engine/kernels/matmul/mxfp4-decode.wat states
 * this layout): the decode splits 16 code bytes into low and high nibbles, looks each code's value
 * up by a swizzle, and makes f32 words of pairs of bytes so that a 32-bit lane holds values j and
 * j + 4 (no shuffle to widen them). It wants the codes of values 0 4 1 5 2 6 3 7 8 12 ... in one
 * register and those 16 higher in another: from OCP order three shuffles a block make that, in
 * halves order the low and high nibbles are those registers already, so its `.halves` build
 * (scripts/build-kernels.mjs) leaves the three out.
 *
 * Stored names: the codes as `W_hblocks` (U8 [..., groups, 16], as `W_blocks`) beside `W_scales`,
 * so no reader that knows only `W_blocks` takes them for OCP order; config.json says
 * `"mxfp4_layout": "halves"`.
 */
export const HALVES_BLOCKS_SUFFIX = "_hblocks";
/** The config.json key that names a checkpoint's MXFP4 code order, and the one value it may take. */
export const MXFP4_LAYOUT_KEY = "mxfp4_layout";
export const MXFP4_HALVES = "halves";

/**
 * Which value of a block's first 16 byte i holds in its low nibble (v(i) + 16 in its high one). This
 * module imports nothing, so the engine's kernels (worker threads) read the order from here.
 */
export const HALVES_ORDER: readonly number[] = [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15];
/** Which byte of a block holds value j (and j + 16): the inverse of HALVES_ORDER. */
export const HALVES_BYTE_OF: readonly number[] = HALVES_ORDER.map((_, j) => HALVES_ORDER.indexOf(j));
const MXFP4_BLOCK_BYTES = HALVES_ORDER.length;

/** OCP-ordered MXFP4 code bytes (whole blocks of 16) in halves order, into a new array. */
export function toHalves(blocks: Uint8Array): Uint8Array {
  return toHalvesInto(blocks, new Uint8Array(blocks.length));
}

/**
 * OCP-ordered MXFP4 code bytes (whole blocks of 16) in halves order into `out` (as long; `blocks`
 * itself re-lays them in place): the copy a load makes anyway, in the order the kernels read best.
 */
export function toHalvesInto(blocks: Uint8Array, out: Uint8Array): Uint8Array {
  const block = new Uint8Array(MXFP4_BLOCK_BYTES);
  for (let at = 0; at < blocks.length; at += MXFP4_BLOCK_BYTES) {
    block.set(blocks.subarray(at, at + MXFP4_BLOCK_BYTES));
    for (let i = 0; i < MXFP4_BLOCK_BYTES; i += 1) {
      // In OCP order value j is byte j >> 1's nibble j & 1, and value j + 16 byte 8 + (j >> 1)'s.
      const j = HALVES_ORDER[i] as number;
      const low = nibble(block[j >> 1] as number, j & 1);
      const high = nibble(block[8 + (j >> 1)] as number, j & 1);
      out[at + i] = low | (high << 4);
    }
  }
  return out;
}

/** Halves-ordered MXFP4 code bytes back in OCP order, in place (the inverse of toHalves). */
export function fromHalvesInPlace(blocks: Uint8Array): Uint8Array {
  const block = new Uint8Array(MXFP4_BLOCK_BYTES);
  const values = new Uint8Array(2 * MXFP4_BLOCK_BYTES);
  for (let at = 0; at < blocks.length; at += MXFP4_BLOCK_BYTES) {
    block.set(blocks.subarray(at, at + MXFP4_BLOCK_BYTES));
    for (let i = 0; i < MXFP4_BLOCK_BYTES; i += 1) {
      const j = HALVES_ORDER[i] as number;
      values[j] = (block[i] as number) & 15;
      values[j + 16] = (block[i] as number) >> 4;
    }
    for (let i = 0; i < MXFP4_BLOCK_BYTES; i += 1)
      blocks[at + i] = (values[2 * i] as number) | ((values[2 * i + 1] as number) << 4);
  }
  return blocks;
}

function nibble(byte: number, high: number): number {
  return high === 0 ? byte & 15 : byte >> 4;
}
