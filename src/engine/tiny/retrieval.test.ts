import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Engine } from "../engine.js";
import { loadModel } from "../loader/load-model.js";
import { readCorpus } from "./corpus.js";
import { generateRetrievalModel } from "./retrieval.js";
import { writeTinyModel } from "./write.js";

async function greedy(engine: Engine, prompt: number[], maxTokens: number): Promise<number[]> {
  const out: number[] = [];
  const request = { promptTokenIds: prompt, maxTokens, ignoreEos: true, sampling: { temperature: 0 } };
  for await (const step of engine.submit(request, new AbortController().signal))
    if (step.token) out.push(step.token.tokenId);
  return out;
}

describe("constructed retrieval model", () => {
  it("loads from its directory and continues a repeated passage by copying it exactly", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bringup-retrieval-"));
    try {
      await writeTinyModel(join(dir, "retrieval"), generateRetrievalModel(await readCorpus()));
      const engine = new Engine(await loadModel(join(dir, "retrieval")), { maxModelLen: 1024, threads: 1 });
      try {
        const text = engine.tokenizer.encode(" The ferry left at nine with 31 crates of salt and a goat.", {
          addSpecialTokens: false,
        });
        const filler = engine.tokenizer.encode(" Gulls argued over the nets while the tide turned.", {
          addSpecialTokens: false,
        });
        const cut = 8;
        const copied = await greedy(engine, [...text, ...filler, ...text.slice(0, cut)], text.length - cut);
        expect(engine.tokenizer.decode(copied)).toBe(engine.tokenizer.decode(text.slice(cut)));
      } finally {
        await engine.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
