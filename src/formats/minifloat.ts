import { BringupError } from "../common/errors.js";

/**
 * A binary floating-point format of at most 16 bits, described by its fields and by how it spends
 * the all-ones exponent: IEEE-style (infinities and NaNs), "fn" (finite, only S.1111.111 is NaN, as
 * E4M3FN), or "none" (every code is a finite number, as the MX element E2M1).
 */
export interface MinifloatFormat {
  readonly name: string;
  readonly exponentBits: number;
  readonly mantissaBits: number;
  readonly bias: number;
  readonly special: "ieee" | "fn" | "none";
}

export const FLOAT16: MinifloatFormat = {
  name: "f16",
  exponentBits: 5,
  mantissaBits: 10,
  bias: 15,
  special: "ieee",
};
export const BFLOAT16: MinifloatFormat = {
  name: "bf16",
  exponentBits: 8,
  mantissaBits: 7,
  bias: 127,
  special: "ieee",
};
export const FP8_E4M3FN: MinifloatFormat = {
  name: "fp8-e4m3fn",
  exponentBits: 4,
  mantissaBits: 3,
  bias: 7,
  special: "fn",
};
export const FP8_E5M2: MinifloatFormat = {
  name: "fp8-e5m2",
  exponentBits: 5,
  mantissaBits: 2,
  bias: 15,
  special: "ieee",
};
export const FP4_E2M1: MinifloatFormat = {
  name: "fp4-e2m1",
  exponentBits: 2,
  mantissaBits: 1,
  bias: 1,
  special: "none",
};

export function codeBits(format: MinifloatFormat): number {
  return 1 + format.exponentBits + format.mantissaBits;
}

/** The value of one code; NaN for NaN codes, ±Infinity for IEEE infinities, -0 kept. */
export function decodeMinifloat(format: MinifloatFormat, code: number): number {
  const { exponentBits, mantissaBits, bias, special } = format;
  const sign = (code >> (exponentBits + mantissaBits)) & 1 ? -1 : 1;
  const exponentField = (code >> mantissaBits) & ((1 << exponentBits) - 1);
  const mantissa = code & ((1 << mantissaBits) - 1);
  const allOnes = (1 << exponentBits) - 1;
  if (special === "ieee" && exponentField === allOnes) return mantissa === 0 ? sign * Infinity : Number.NaN;
  if (special === "fn" && exponentField === allOnes && mantissa === (1 << mantissaBits) - 1)
    return Number.NaN;
  if (exponentField === 0) return sign * mantissa * 2 ** (1 - bias - mantissaBits);
  return sign * (1 + mantissa / 2 ** mantissaBits) * 2 ** (exponentField - bias);
}

/** The largest finite magnitude of the format (448 for E4M3FN, 6 for E2M1, 65504 for f16). */
export function maxFinite(format: MinifloatFormat): number {
  const { exponentBits, mantissaBits, bias, special } = format;
  const allOnes = (1 << exponentBits) - 1;
  const mantissaMax = (1 << mantissaBits) - 1;
  if (special === "ieee") return (1 + mantissaMax / 2 ** mantissaBits) * 2 ** (allOnes - 1 - bias);
  if (special === "fn") return (1 + (mantissaMax - 1) / 2 ** mantissaBits) * 2 ** (allOnes - bias);
  return (1 + mantissaMax / 2 ** mantissaBits) * 2 ** (allOnes - bias);
}

function nanCode(format: MinifloatFormat): number {
  // The positive quiet NaN: exponent all ones, mantissa all ones (IEEE and FN agree on that code).
  return (1 << (format.exponentBits + format.mantissaBits)) - 1;
}

function infinityCode(format: MinifloatFormat): number {
  return ((1 << format.exponentBits) - 1) << format.mantissaBits;
}

function roundHalfEven(n: number): number {
  const floor = Math.floor(n);
  const rest = n - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** floor(log2(a)) for a finite positive double, exact (Math.log2 can be off by one near powers of two). */
function exponentOf(a: number): number {
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  else if (2 ** (e + 1) <= a) e += 1;
  return e;
}

export interface EncodeOptions {
  /** Clamp magnitudes beyond the largest finite value to it instead of producing Inf or NaN. */
  readonly saturate?: boolean;
}

/**
 * The code nearest to `value`, ties to even (IEEE 754 roundTiesToEven). Overflow gives infinity (IEEE),
 * NaN (FN) or, when saturating, the largest finite value. E2M1 has no NaN or infinity: it always
 * saturates, as the MX spec prescribes for element conversion, and rejects NaN.
 */
export function encodeMinifloat(format: MinifloatFormat, value: number, options: EncodeOptions = {}): number {
  const { exponentBits, mantissaBits, bias, special } = format;
  const signBit = 1 << (exponentBits + mantissaBits);
  if (Number.isNaN(value)) {
    if (special === "none") {
      throw new BringupError("CODEC_NAN", `${format.name} has no NaN; remove NaN values before encoding.`);
    }
    return nanCode(format);
  }
  const sign = value < 0 || Object.is(value, -0) ? signBit : 0;
  const magnitude = Math.abs(value);
  const max = maxFinite(format);
  const saturate = options.saturate === true || special === "none";
  const overflow = (): number => {
    if (saturate) return sign | encodeMagnitude(format, max);
    return sign | (special === "ieee" ? infinityCode(format) : nanCode(format));
  };
  if (magnitude === Infinity) return overflow();
  if (magnitude === 0) return sign;
  const minNormalExponent = 1 - bias;
  const quantumExponent = Math.max(exponentOf(magnitude), minNormalExponent) - mantissaBits;
  const rounded = roundHalfEven(magnitude / 2 ** quantumExponent) * 2 ** quantumExponent;
  if (rounded > max) return overflow();
  return sign | encodeMagnitude(format, rounded);
}

/** The code of a magnitude that the format represents exactly. */
function encodeMagnitude(format: MinifloatFormat, magnitude: number): number {
  const { mantissaBits, bias } = format;
  if (magnitude === 0) return 0;
  const minNormalExponent = 1 - bias;
  if (magnitude < 2 ** minNormalExponent) return magnitude / 2 ** (minNormalExponent - mantissaBits);
  const exponent = exponentOf(magnitude);
  const mantissa = (magnitude / 2 ** exponent - 1) * 2 ** mantissaBits;
  return ((exponent + bias) << mantissaBits) | mantissa;
}

/** Every code's value, for table-driven decoding of 8- and 16-bit formats. */
export function decodeTable(format: MinifloatFormat): Float32Array {
  const table = new Float32Array(2 ** codeBits(format));
  for (let code = 0; code < table.length; code += 1) table[code] = decodeMinifloat(format, code);
  return table;
}
