/**
 * Whether FP8 E4M3FN codes hold NaN's (0x7f or 0xff): decided once per weight, so a weight with
 * none runs matmul/fp8-rows.wat's `.nan-free` build, which has no test for them per 16 codes.
 */
export function hasFp8NanCode(codes: Uint8Array): boolean {
  const head = Math.min(codes.length, (4 - (codes.byteOffset % 4)) % 4);
  const words = (codes.length - head) >> 2;
  if (words === 0) return hasNanCodeFrom(codes, 0);
  if (hasNanCodeFrom(codes.subarray(0, head), 0)) return true;
  // Four codes a word: each byte's low seven bits xor 0x7f is zero only for NaN's codes, and a
  // word of bytes below 0x80 has a zero byte exactly where subtracting 0x01 from each borrows.
  const view = new Uint32Array(codes.buffer, codes.byteOffset + head, words);
  for (let i = 0; i < words; i++) {
    const v = ((view[i] as number) & 0x7f7f7f7f) ^ 0x7f7f7f7f;
    if (((v - 0x01010101) & 0x80808080) !== 0) return true;
  }
  return hasNanCodeFrom(codes, head + words * 4);
}

function hasNanCodeFrom(codes: Uint8Array, start: number): boolean {
  for (let i = start; i < codes.length; i++) if (((codes[i] as number) & 0x7f) === 0x7f) return true;
  return false;
}
