import { describe, expect, it } from "vitest";
import { readCorpus } from "../tiny/corpus.js";
import { trainByteLevelBpe } from "./bpe-train.js";
import { TextTokenizer } from "./tokenizer.js";
import { buildTokenizerFiles } from "./tokenizer-files.js";

const corpus = await readCorpus();
const bpe = trainByteLevelBpe(corpus, 400);
const files = buildTokenizerFiles(bpe, 1024);
const tokenizer = new TextTokenizer(files.tokenizerJson, files.tokenizerConfig);

describe("byte-level BPE tokenizer", () => {
  it("trains the same vocabulary every time", () => {
    const again = trainByteLevelBpe(corpus, 400);
    expect(again.merges).toEqual(bpe.merges);
    expect(bpe.vocab).toHaveLength(400);
  });

  it("round-trips text, including characters the corpus never had", () => {
    for (const text of [
      "The lamp on the breakwater.",
      "  two  spaces\nand a line",
      "naïve café — 東京 🎉",
      "x=1; y=22.5",
    ]) {
      const ids = tokenizer.encode(text);
      expect(tokenizer.decode(ids)).toBe(text);
    }
  });

  it("compresses corpus text below one token per byte with its merges", () => {
    const sample = corpus.slice(0, 2000);
    expect(tokenizer.encode(sample).length).toBeLessThan(new TextEncoder().encode(sample).length * 0.6);
  });

  it("keeps special tokens whole and renders the ChatML template", () => {
    const prompt = tokenizer.applyChatTemplate([{ role: "user", content: "Hello there" }]);
    expect(prompt).toBe("<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n");
    const ids = tokenizer.encode(prompt, { addSpecialTokens: false });
    expect(ids[0]).toBe(files.specialIds["<|im_start|>"]);
    expect(ids.at(-1)).not.toBe(files.specialIds["<|im_end|>"]);
    expect(tokenizer.eosTokenIds).toEqual([files.specialIds["<|im_end|>"]]);
    expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe("user\nHello there\nassistant\n");
  });

  it("streams the same text incrementally as decoding all at once, holding back split characters", () => {
    const text = "Orla said: “naïve 東京 🎉” and left.";
    const ids = tokenizer.encode(text);
    const detok = tokenizer.createDetokenizer();
    let streamed = "";
    for (const id of ids) {
      const delta = detok.push(id);
      expect(delta).not.toContain("\uFFFD");
      streamed += delta;
    }
    streamed += detok.flush();
    expect(streamed).toBe(text);
  });

  it("rejects ids outside the vocabulary", () => {
    expect(() => tokenizer.decode([tokenizer.size])).toThrow(/outside the vocabulary/);
  });
});
