import { describe, expect, it } from "vitest";
import { sequence } from "./core-fixture.js";
import { Sequence } from "./sequence.js";

describe("Sequence", () => {
  it("sends its prompt logprobs once, on the first output after they are complete", () => {
    const seq = sequence(3, 1, { promptLogprobs: 0 });
    expect([0, 1, 2].map((p) => seq.wantsPromptLogprob(p))).toEqual([true, true, false]);
    expect(seq.output(undefined, null).promptLogprobs).toBeUndefined();
    seq.promptLogprobs?.push({ tokenId: 2, logprob: -1, rank: 1 }, { tokenId: 3, logprob: -2, rank: 1 });
    const first = seq.output({ tokenId: 5, logprob: -0.5, rank: 1 }, null);
    expect(first.promptLogprobs).toHaveLength(3);
    expect(seq.wantsPromptLogprob(0)).toBe(false);
    expect(seq.output(undefined, "length")).toEqual({
      finishReason: "length",
      numPromptTokens: 3,
      numGeneratedTokens: 0,
    });
  });

  it("stands for its forks among max_num_seqs, and one table per pool", () => {
    const lead = sequence(4, 3);
    expect(lead.width).toBe(1);
    lead.forks = [sequence(4, 3), sequence(4, 3)];
    expect(lead.width).toBe(2);
    expect(lead.tables).toEqual([[], [], []]);
  });

  it("stops on end-of-sequence and stop tokens, on stop tokens alone when eos is ignored", () => {
    const request = { promptTokenIds: [1], maxTokens: 1, stopTokenIds: [7] };
    expect([...new Sequence(0, request, undefined, 1, [2]).stopIds]).toEqual([2, 7]);
    expect([...new Sequence(1, { ...request, ignoreEos: true }, undefined, 1, [2]).stopIds]).toEqual([7]);
  });
});
