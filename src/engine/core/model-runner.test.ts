import { afterAll, describe, expect, it } from "vitest";
import { planKvCache } from "../cache/capacity.js";
import { MatmulPool } from "../kernels/pool.js";
import { scoredToken } from "../request.js";
import { createTinyModel } from "../tiny/generate.js";
import { findTinySize, type TinySize } from "../tiny/sizes.js";
import { CacheManager } from "./cache-manager.js";
import { sequence } from "./core-fixture.js";
import { ModelRunner } from "./model-runner.js";
import type { Chunk } from "./sequence.js";

const model = await createTinyModel(findTinySize("tiny") as TinySize);
const pool = new MatmulPool(2);
afterAll(() => pool.close());

function runner(): { runner: ModelRunner; cache: CacheManager } {
  const plan = planKvCache(model.model.states(), "window-sized", 16);
  const cache = new CacheManager(plan, [32]);
  return { runner: new ModelRunner(model.model, pool, new Map(), cache), cache };
}

describe("ModelRunner", () => {
  it("asks for logits only where a prompt logprob or the next token is wanted", () => {
    const { runner: r, cache } = runner();
    const scored = sequence(6, 1, { promptLogprobs: 0 });
    const plain = sequence(5, 1);
    const chunks: Chunk[] = [
      { seq: scored, start: 0, count: 4 },
      { seq: plain, start: 0, count: 5 },
    ];
    for (const c of chunks) cache.tryAllocate(c.seq, c.count);
    const { logits, rowsOf } = r.run(chunks);
    // The scored prompt's first chunk: a row for each position's next prompt token; the plain
    // prompt completes: one row, its last token's.
    expect(rowsOf).toEqual([
      [0, 1, 2, 3],
      [-1, -1, -1, -1, 4],
    ]);
    expect(logits.length).toBe(5 * r.vocabSize);
    r.recordPromptLogprobs(chunks[0] as Chunk, rowsOf[0] as number[], logits);
    expect(scored.promptLogprobs?.map((lp) => lp?.tokenId ?? null)).toEqual([
      null,
      ...scored.tokens.slice(1, 5),
    ]);
  });

  it("gives each sequence the same logits batched as alone, and samples greedily from them", () => {
    const alone = (n: number) => {
      const { runner: r, cache } = runner();
      const seq = sequence(n, 1);
      cache.tryAllocate(seq, n);
      return r.run([{ seq, start: 0, count: n }]).logits;
    };
    const { runner: r, cache } = runner();
    const seqs = [sequence(7, 1), sequence(3, 1)];
    for (const s of seqs) cache.tryAllocate(s, s.tokens.length);
    const { logits } = r.run(seqs.map((seq) => ({ seq, start: 0, count: seq.tokens.length })));
    const V = r.vocabSize;
    expect(logits.subarray(0, V)).toEqual(alone(7));
    expect(logits.subarray(V, 2 * V)).toEqual(alone(3));
    const greedy = sequence(7, 1, { sampling: { temperature: 0 }, logprobs: 1 });
    const token = r.sample(greedy, logits, 0);
    const row = logits.subarray(0, V);
    expect(token.tokenId).toBe(row.indexOf(Math.max(...row)));
    expect([token.rank, token.top?.length]).toEqual([1, 1]);
    // Unasked, no logprob is computed: the token comes alone, and reading its logprob throws.
    const unscored = r.sample(sequence(7, 1, { sampling: { temperature: 0 } }), logits, 0);
    expect(unscored).toEqual({ tokenId: token.tokenId });
    expect(() => scoredToken(unscored)).toThrow(expect.objectContaining({ code: "LOGPROB_NOT_COMPUTED" }));
  });
});
