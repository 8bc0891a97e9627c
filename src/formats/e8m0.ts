/** OCP MX E8M0 scale: an unsigned biased exponent, value 2^(code-127); code 0xFF is NaN. */
export const E8M0_BIAS = 127;
export const E8M0_NAN = 0xff;

export function decodeE8m0(code: number): number {
  return code === E8M0_NAN ? Number.NaN : 2 ** (code - E8M0_BIAS);
}

/**
 * The code of 2^exponent. The MX spec clamps shared exponents below the range to the smallest scale;
 * an exponent above 127 cannot be represented and gives NaN.
 */
export function encodeE8m0Exponent(exponent: number): number {
  if (exponent > 127) return E8M0_NAN;
  return Math.max(exponent, -E8M0_BIAS) + E8M0_BIAS;
}

/** Every code's value as float32 (2^-127 is a float32 subnormal, so all 255 finite values fit). */
export function e8m0Table(): Float32Array {
  const table = new Float32Array(256);
  for (let code = 0; code < 256; code += 1) table[code] = decodeE8m0(code);
  return table;
}
