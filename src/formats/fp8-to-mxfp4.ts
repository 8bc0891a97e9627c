import { BringupError } from "../common/errors.js";
import { decodeE8m0, E8M0_NAN } from "./e8m0.js";
import { MXFP4_BLOCK, MXFP4_BLOCK_BYTES, mxfp4ScaleCode } from "./mxfp4.js";

/** E2M1 magnitude code by twice the magnitude (0, 0.5, 1, 1.5, 2, 3, 4, 6), -1 where none. */
const CODE_BY_DOUBLE = [0, 1, 2, 3, 4, -1, 5, -1, 6, -1, -1, -1, 7];

/** The E2M1 code of `value` when it is one exactly (-0 keeps its sign), else -1. */
function e2m1Code(value: number): number {
  const twice = Math.abs(value) * 2;
  const code = Number.isInteger(twice) && twice <= 12 ? (CODE_BY_DOUBLE[twice] as number) : -1;
  if (code < 0) return -1;
  return code | (value < 0 || Object.is(value, -0) ? 8 : 0);
}

/**
 * Re-encodes decoded FP8 values (exact, in float64) as MXFP4 blocks of 32 along the last dimension,
 * exactly or not at all. Each block takes the first scale under which every value is an E2M1 value:
 * `preferred[b]` when given (the source's own per-32 scale, so MXFP4 to FP8 1x32 and back is
 * bit-identical), else the spec's choice from the block's largest value (an MXFP4 encoder's). A
 * value no scale carries exactly is refused, named by its element from `first`.
 */
export function fp8ValuesToMxfp4(
  values: Float64Array,
  subject: string,
  first: number,
  preferred?: Float32Array,
): { blocks: Uint8Array; scales: Uint8Array } {
  const count = values.length / MXFP4_BLOCK;
  const blocks = new Uint8Array(count * MXFP4_BLOCK_BYTES);
  const scales = new Uint8Array(count);
  const nibbles = new Uint8Array(MXFP4_BLOCK);
  const fits = (b: number, code: number): boolean => {
    if (code === E8M0_NAN) return false;
    const scale = decodeE8m0(code);
    for (let i = 0; i < MXFP4_BLOCK; i += 1) {
      const nibble = e2m1Code((values[b * MXFP4_BLOCK + i] as number) / scale);
      // Dividing by a power of two is exact unless it underflows, which the check back catches.
      if (nibble < 0 || (values[b * MXFP4_BLOCK + i] as number) !== nibbleValue(nibble) * scale) return false;
      nibbles[i] = nibble;
    }
    return true;
  };
  for (let b = 0; b < count; b += 1) {
    let amax = 0;
    for (let i = b * MXFP4_BLOCK; i < (b + 1) * MXFP4_BLOCK; i += 1) {
      const v = values[i] as number;
      if (!Number.isFinite(v)) refuse(subject, first + i, v);
      amax = Math.max(amax, Math.abs(v));
    }
    const own = preferred === undefined ? -1 : powerOfTwoCode(preferred[b] as number);
    const code = own >= 0 && fits(b, own) ? own : mxfp4ScaleCode(amax);
    if (code !== own && !fits(b, code)) {
      const at = firstMisfit(values, b, code);
      refuse(subject, first + at, values[at] as number);
    }
    scales[b] = code;
    for (let j = 0; j < MXFP4_BLOCK_BYTES; j += 1)
      blocks[b * MXFP4_BLOCK_BYTES + j] = (nibbles[2 * j] as number) | ((nibbles[2 * j + 1] as number) << 4);
  }
  return { blocks, scales };
}

const MAGNITUDES = [0, 0.5, 1, 1.5, 2, 3, 4, 6];

function nibbleValue(nibble: number): number {
  const magnitude = MAGNITUDES[nibble & 7] as number;
  return nibble & 8 ? -magnitude : magnitude;
}

/** The E8M0 code of a power of two in its range, else -1. */
function powerOfTwoCode(scale: number): number {
  if (!(scale > 0)) return -1;
  const exponent = Math.round(Math.log2(scale));
  return 2 ** exponent === scale && exponent >= -127 && exponent <= 127 ? exponent + 127 : -1;
}

function firstMisfit(values: Float64Array, block: number, code: number): number {
  const scale = decodeE8m0(code);
  for (let i = block * MXFP4_BLOCK; i < (block + 1) * MXFP4_BLOCK; i += 1) {
    const nibble = e2m1Code((values[i] as number) / scale);
    if (nibble < 0 || values[i] !== nibbleValue(nibble) * scale) return i;
  }
  return block * MXFP4_BLOCK;
}

function refuse(subject: string, element: number, value: number): never {
  throw new BringupError(
    "NOT_REPRESENTABLE",
    `${subject}: element ${element} is ${value}, which no MXFP4 block scale carries exactly beside its 31 neighbours; convert the checkpoint --to bf16 (exact), or leave it FP8 (one output cannot hold FP8 beside MXFP4 weights, so no flag keeps this one weight FP8).`,
    { subject },
  );
}
