/**
 * bfloat16 is the top half of a float32, so whole-array conversion works on the bits directly; this
 * is the fast path the loaders and converters use. Rounding is to nearest, ties to even; NaNs stay NaN.
 */
export function float32ToBf16(values: Float32Array, out = new Uint16Array(values.length)): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < bits.length; i += 1) {
    const x = bits[i] as number;
    if ((x & 0x7fffffff) > 0x7f800000) {
      out[i] = (x >>> 16) | 0x40; // keep the sign, force a quiet NaN so truncation cannot make it Inf
    } else {
      out[i] = (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
    }
  }
  return out;
}

export function bf16ToFloat32(codes: Uint16Array, out = new Float32Array(codes.length)): Float32Array {
  const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < codes.length; i += 1) bits[i] = (codes[i] as number) << 16;
  return out;
}
