import { BringupError } from "../common/errors.js";

/**
 * Byte-level, lossless re-layouts of one stored tensor. Each works on raw bytes with the element
 * size given, so it applies to any dtype, including packed MXFP4 blocks (as u8) and their scales.
 */

/** Swaps the last two dimensions. */
export function transposeLast2(
  bytes: Uint8Array,
  shape: readonly number[],
  elementBytes: number,
): { bytes: Uint8Array; shape: number[] } {
  if (shape.length < 2) {
    throw new BringupError(
      "RELAYOUT_BAD_SHAPE",
      `transpose needs at least 2 dimensions; got [${shape.join(", ")}].`,
    );
  }
  const rows = shape.at(-2) as number;
  const cols = shape.at(-1) as number;
  const matrix = rows * cols * elementBytes;
  const out = new Uint8Array(bytes.length);
  for (let m = 0; m < bytes.length; m += matrix) {
    for (let r = 0; r < rows; r += 1) {
      for (let c = 0; c < cols; c += 1) {
        const from = m + (r * cols + c) * elementBytes;
        out.set(bytes.subarray(from, from + elementBytes), m + (c * rows + r) * elementBytes);
      }
    }
  }
  return { bytes: out, shape: [...shape.slice(0, -2), cols, rows] };
}

/** Exchanges the two 4-bit halves of every byte: low-nibble-first packing to high-nibble-first and back. */
export function swapNibbles(bytes: Uint8Array): Uint8Array {
  return bytes.map((b) => ((b & 15) << 4) | (b >> 4));
}

function axisView(shape: readonly number[], axis: number, elementBytes: number) {
  const length = shape[axis];
  if (length === undefined || length % 2 !== 0) {
    throw new BringupError(
      "RELAYOUT_BAD_SHAPE",
      `gate/up re-layout needs an even dimension ${axis} in [${shape.join(", ")}]: gate and up halves.`,
    );
  }
  const inner = shape.slice(axis + 1).reduce((a, b) => a * b, 1) * elementBytes;
  const outer = shape.slice(0, axis).reduce((a, b) => a * b, 1);
  return { length, inner, outer };
}

/**
 * Gate and up projections stored interleaved along `axis` (gate 0, up 0, gate 1, up 1, ...) become
 * concatenated (all gates, then all ups), or back when `toInterleaved`.
 */
export function regroupGateUp(
  bytes: Uint8Array,
  shape: readonly number[],
  axis: number,
  elementBytes: number,
  toInterleaved: boolean,
): Uint8Array {
  const { length, inner, outer } = axisView(shape, axis, elementBytes);
  const half = length / 2;
  const out = new Uint8Array(bytes.length);
  for (let o = 0; o < outer; o += 1) {
    const base = o * length * inner;
    for (let i = 0; i < half; i += 1) {
      for (const [which, concatenatedAt] of [
        [0, i],
        [1, half + i],
      ] as const) {
        const interleavedAt = 2 * i + which;
        const [from, to] = toInterleaved ? [concatenatedAt, interleavedAt] : [interleavedAt, concatenatedAt];
        out.set(bytes.subarray(base + from * inner, base + (from + 1) * inner), base + to * inner);
      }
    }
  }
  return out;
}

/** Splits a fused tensor along its first dimension (experts) into one tensor per index. */
export function splitFirstAxis(
  bytes: Uint8Array,
  shape: readonly number[],
): { bytes: Uint8Array; shape: number[] }[] {
  const count = shape[0];
  if (count === undefined || count === 0) {
    throw new BringupError(
      "RELAYOUT_BAD_SHAPE",
      `splitting experts needs a leading dimension; got [${shape.join(", ")}].`,
    );
  }
  const size = bytes.length / count;
  return Array.from({ length: count }, (_, e) => ({
    bytes: bytes.slice(e * size, (e + 1) * size),
    shape: shape.slice(1),
  }));
}

/** Stacks same-shaped tensors along a new first dimension. */
export function stackFirstAxis(parts: readonly { bytes: Uint8Array; shape: readonly number[] }[]): {
  bytes: Uint8Array;
  shape: number[];
} {
  const first = parts[0];
  if (first === undefined) throw new BringupError("RELAYOUT_BAD_SHAPE", "nothing to stack.");
  for (const p of parts) {
    if (p.shape.length !== first.shape.length || p.shape.some((d, i) => d !== first.shape[i])) {
      throw new BringupError(
        "RELAYOUT_BAD_SHAPE",
        `experts to fuse must share one shape; found [${first.shape.join(", ")}] and [${p.shape.join(", ")}].`,
      );
    }
  }
  const out = new Uint8Array(parts.length * first.bytes.length);
  parts.forEach((p, e) => {
    out.set(p.bytes, e * first.bytes.length);
  });
  return { bytes: out, shape: [parts.length, ...first.shape] };
}
