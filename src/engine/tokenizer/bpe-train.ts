import { BringupError } from "../../common/errors.js";
import { bytesToUnicode, GPT2_SPLIT } from "./byte-level.js";

export interface TrainedBpe {
  /** Token strings in id order (byte-level characters); ids 0..255 are the single bytes. */
  readonly vocab: readonly string[];
  /** Merges in priority order, each as [left, right]. */
  readonly merges: readonly (readonly [string, string])[];
}

/**
 * Trains a byte-level BPE vocabulary of at most `vocabSize` tokens on `text`, deterministically:
 * the most frequent adjacent pair is merged first, ties going to the pair of lower token ids.
 * Like HF's trainer with min_frequency 0, pairs seen once still merge; training stops early only when
 * every word is a single token. Hand-written because no maintained JS library
 * trains BPE (the tokenizer libraries here only encode).
 */
export function trainByteLevelBpe(text: string, vocabSize: number): TrainedBpe {
  if (!Number.isInteger(vocabSize) || vocabSize < 256) {
    throw new BringupError(
      "BPE_VOCAB_TOO_SMALL",
      `a byte-level BPE vocabulary needs at least 256 tokens, got ${vocabSize}.`,
    );
  }
  const byteChars = bytesToUnicode();
  const vocab: string[] = [...byteChars];
  const encoder = new TextEncoder();
  const wordCounts = new Map<string, number>();
  for (const match of text.matchAll(GPT2_SPLIT)) {
    wordCounts.set(match[0], (wordCounts.get(match[0]) ?? 0) + 1);
  }
  // Sorted so that word order (and with it every tie) does not depend on Map insertion order.
  const words = [...wordCounts.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([word, count]) => ({ symbols: Array.from(encoder.encode(word)), count }));

  const stride = vocabSize;
  const pairCounts = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const heap = new PairHeap();
  const bump = (key: number, delta: number, word: number) => {
    const next = (pairCounts.get(key) ?? 0) + delta;
    pairCounts.set(key, next);
    if (delta > 0) {
      let set = pairWords.get(key);
      if (set === undefined) {
        set = new Set();
        pairWords.set(key, set);
      }
      set.add(word);
    }
    if (next > 0) heap.push(next, key);
  };
  words.forEach((w, i) => {
    for (let j = 0; j + 1 < w.symbols.length; j++)
      bump((w.symbols[j] as number) * stride + (w.symbols[j + 1] as number), w.count, i);
  });

  const merges: [string, string][] = [];
  while (vocab.length < vocabSize) {
    let best: { count: number; key: number } | undefined;
    for (;;) {
      const top = heap.pop();
      if (top === undefined) break;
      if (pairCounts.get(top.key) === top.count) {
        best = top;
        break;
      }
    }
    if (best === undefined) break;
    const a = Math.floor(best.key / stride);
    const b = best.key % stride;
    const id = vocab.length;
    vocab.push((vocab[a] as string) + (vocab[b] as string));
    merges.push([vocab[a] as string, vocab[b] as string]);
    const affected = [...(pairWords.get(best.key) ?? [])].sort((x, y) => x - y);
    pairWords.delete(best.key);
    for (const wi of affected) {
      const w = words[wi] as { symbols: number[]; count: number };
      const s = w.symbols;
      for (let j = 0; j + 1 < s.length; j++)
        bump((s[j] as number) * stride + (s[j + 1] as number), -w.count, wi);
      const merged: number[] = [];
      for (let j = 0; j < s.length; j++) {
        if (j + 1 < s.length && s[j] === a && s[j + 1] === b) {
          merged.push(id);
          j++;
        } else merged.push(s[j] as number);
      }
      w.symbols = merged;
      for (let j = 0; j + 1 < merged.length; j++)
        bump((merged[j] as number) * stride + (merged[j + 1] as number), w.count, wi);
    }
  }
  return { vocab, merges };
}

/** A binary max-heap of (count, key), higher count first, then lower key. Stale entries are skipped by the caller. */
class PairHeap {
  private readonly counts: number[] = [];
  private readonly keys: number[] = [];

  push(count: number, key: number): void {
    this.counts.push(count);
    this.keys.push(key);
    let i = this.counts.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  pop(): { count: number; key: number } | undefined {
    if (this.counts.length === 0) return undefined;
    const top = { count: this.counts[0] as number, key: this.keys[0] as number };
    const lastCount = this.counts.pop() as number;
    const lastKey = this.keys.pop() as number;
    if (this.counts.length > 0) {
      this.counts[0] = lastCount;
      this.keys[0] = lastKey;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.counts.length && this.before(l, m)) m = l;
        if (r < this.counts.length && this.before(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }

  private before(i: number, j: number): boolean {
    const ci = this.counts[i] as number;
    const cj = this.counts[j] as number;
    return ci > cj || (ci === cj && (this.keys[i] as number) < (this.keys[j] as number));
  }

  private swap(i: number, j: number): void {
    [this.counts[i], this.counts[j]] = [this.counts[j] as number, this.counts[i] as number];
    [this.keys[i], this.keys[j]] = [this.keys[j] as number, this.keys[i] as number];
  }
}
