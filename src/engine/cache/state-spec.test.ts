import { describe, expect, it } from "vitest";
import {
  floatsPerSequence,
  floatsPerSlot,
  floatsPerToken,
  isPerToken,
  kvFloatsPerToken,
  type LayerStates,
  type StateSpec,
  underLayout,
} from "./state-spec.js";

const kv = { numKvHeads: 2, headDim: 8, vHeadDim: 4 };

describe("state specs", () => {
  it("size each kind per token or per sequence", () => {
    const perToken: [StateSpec, number][] = [
      [{ kind: "full", ...kv }, 24],
      [{ kind: "sliding-window", window: 5, ...kv }, 24],
      [{ kind: "sliding-mask", window: 5, ...kv }, 24],
      [{ kind: "latent", latentDim: 32, ropeDim: 8 }, 40],
      [{ kind: "indexer-keys", headDim: 16 }, 16],
      [{ kind: "compressed", width: 16, ratio: 4 }, 4],
    ];
    for (const [spec, floats] of perToken) {
      expect(isPerToken(spec) && floatsPerToken(spec)).toBe(floats);
    }
    const recurrent: StateSpec = { kind: "recurrent-state", numHeads: 2, keyDim: 4, valueDim: 3 };
    const tail: StateSpec = { kind: "conv-tail", channels: 6, kernel: 4 };
    expect([recurrent, tail].map((s) => !isPerToken(s) && floatsPerSequence(s))).toEqual([24, 18]);
  });

  it("size a compressed row by its width, shared by the ratio's positions", () => {
    expect(floatsPerSlot({ kind: "compressed", width: 16, ratio: 4 })).toBe(16);
    expect(floatsPerSlot({ kind: "latent", latentDim: 32, ropeDim: 8 })).toBe(40);
  });

  it("keep a sliding window as a mask over full storage in the full layout, all else as asked", () => {
    const ring: StateSpec = { kind: "sliding-window", window: 5, ...kv };
    expect(underLayout(ring, "full")).toEqual({ ...ring, kind: "sliding-mask" });
    expect(underLayout(ring, "window-sized")).toBe(ring);
    const full: StateSpec = { kind: "full", ...kv };
    expect(underLayout(full, "full")).toBe(full);
  });

  it("sum the per-token floats of every layer, per-sequence states aside", () => {
    const layers: LayerStates[] = [
      { kv: { kind: "full", ...kv } },
      { state: { kind: "recurrent-state", numHeads: 2, keyDim: 4, valueDim: 4 } },
      { latent: { kind: "latent", latentDim: 32, ropeDim: 8 }, keys: { kind: "indexer-keys", headDim: 16 } },
      {},
    ];
    expect(kvFloatsPerToken(layers)).toBe(24 + 40 + 16);
  });
});
