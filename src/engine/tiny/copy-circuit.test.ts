import { describe, expect, it } from "vitest";
import {
  codeEmbedding,
  codeLmHead,
  copyOutputCode,
  copySlots,
  inductionQueryKey,
  tokenCodes,
} from "./copy-circuit.js";

describe("token codes", () => {
  const codes = tokenCodes(5, 3, 4, 6);

  it("gives each token a unit match code and a unit output code, the same for the same seed", () => {
    expect(codes.match.map((c) => c.length)).toEqual([4, 4, 4]);
    expect(codes.output.map((c) => c.length)).toEqual([6, 6, 6]);
    for (const c of [...codes.match, ...codes.output]) {
      expect(Math.hypot(...c)).toBeCloseTo(1, 6);
    }
    expect(tokenCodes(5, 3, 4, 6)).toEqual(codes);
    expect(tokenCodes(6, 3, 4, 6).match[0]).not.toEqual(codes.match[0]);
  });

  it("embeds both codes in their slots and reads the output code back as the token in the LM head", () => {
    const hidden = 16;
    const embed = codeEmbedding(codes, hidden, 0, 4);
    expect(embed.subarray(hidden, hidden + 4)).toEqual(codes.match[1]);
    expect(embed.subarray(hidden + 4, hidden + 10)).toEqual(codes.output[1]);
    expect(embed.subarray(hidden + 10, 2 * hidden).every((x) => x === 0)).toBe(true);

    const head = codeLmHead(codes, hidden, 10, 40);
    // A residual holding token 2's output code at slot 10 scores token 2 highest.
    const residual = new Float32Array(hidden);
    residual.set(codes.output[2] as Float32Array, 10);
    const logits = [0, 1, 2].map((t) =>
      residual.reduce((s, x, j) => s + x * (head[t * hidden + j] as number), 0),
    );
    expect(logits[2]).toBeCloseTo(40, 4);
    expect(Math.max(...logits)).toBe(logits[2]);
  });
});

describe("copy slots and the induction head", () => {
  const slots = copySlots(2, 3, 2);
  const { hidden } = slots;

  it("lays out own_m, own_u, the previous match codes and out_u back to back", () => {
    expect(slots).toMatchObject({ hidden: 2 + 3 + 2 * 2 + 3, ownM: 0, ownU: 2, prev: 5, outU: 9 });
  });

  it("scores a position by how many tokens of the n-gram before it agree with the current one", () => {
    const wide = copySlots(3, 3, 2);
    const rows = 2 + 2 * 3;
    const { q, k } = inductionQueryKey(wide, rows, 2, 1);
    // Match codes a, b, c one-hot; the current token is b after a.
    const [a, b, c] = [
      [1, 0, 0],
      [0, 1, 0],
      [0, 0, 1],
    ];
    const stream = (own: number[] | undefined, prev: (number[] | undefined)[]) => {
      const x = new Float32Array(wide.hidden);
      x.set(own ?? [], wide.ownM);
      prev.forEach((p, i) => {
        x.set(p ?? [], wide.prev + i * 3);
      });
      return x;
    };
    const project = (w: Float32Array, x: Float32Array) =>
      Array.from({ length: rows }, (_, row) =>
        x.reduce((s, v, j) => s + v * (w[row * wide.hidden + j] as number), 0),
      );
    const query = project(q, stream(b, [a, c]));
    const score = (prev: (number[] | undefined)[]) =>
      project(k, stream(c, prev)).reduce((s, v, i) => s + v * (query[i] as number), 0);
    expect(query.slice(0, 2)).toEqual([0, 0]); // the features before firstFeature stay unwritten
    expect(score([b, a])).toBe(2); // the position right after "a b"
    expect(score([b, c])).toBe(1);
    expect(score([a, b])).toBe(0);
  });

  it("copies own_u into out_u through value and output", () => {
    const { v, o } = copyOutputCode(slots, 4, 5);
    const x = new Float32Array(hidden);
    x.set([0.5, -1, 2], slots.ownU);
    const value = Array.from({ length: 4 }, (_, row) =>
      x.reduce((s, e, j) => s + e * (v[row * hidden + j] as number), 0),
    );
    const out = Array.from({ length: hidden }, (_, row) =>
      value.reduce((s, e, j) => s + e * (o[row * 5 + j] as number), 0),
    );
    expect(out.slice(slots.outU)).toEqual([0.5, -1, 2]);
    expect(out.slice(0, slots.outU).every((e) => e === 0)).toBe(true);
  });
});
