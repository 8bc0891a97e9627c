/**
 * GPT-2's reversible byte-to-character map used by byte-level BPE: printable Latin-1 bytes stand
 * for themselves, the rest are shifted to code points from 256 up so no token holds a control or
 * space character. HF's ByteLevel pre-tokenizer and decoder use this same table.
 */
export function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const keep = new Set(printable);
  const table: string[] = new Array(256);
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = String.fromCodePoint(keep.has(b) ? b : 256 + shifted++);
  }
  return table;
}

/**
 * The GPT-2 pre-tokenization pattern (contractions, letter runs, digit runs, punctuation runs,
 * whitespace), which HF's ByteLevel pre-tokenizer applies when use_regex is true.
 */
export const GPT2_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
