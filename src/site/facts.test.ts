import { describe, expect, it } from "vitest";
import { Gate, Target } from "../catalog/index.js";
import { formatParams, gateThreshold, runsOn } from "./facts.js";

describe("formatParams", () => {
  it("writes billions below a thousand and trillions above", () => {
    expect(formatParams(816)).toBe("816B");
    expect(formatParams(1020)).toBe("1.02T");
    expect(formatParams(30)).toBe("30B");
  });
});

describe("runsOn", () => {
  it("states the shipped layout and each variant", () => {
    const target = Target.parse({
      accelerator: "gaudi2",
      cards: 8,
      nodes: 1,
      variants: [
        { name: "two-node FP8", cards: 16, nodes: 2, weight_format: "fp8", documented: true, note: "n" },
        { name: "one card", cards: 1, nodes: 1, documented: false, note: "n" },
      ],
    });
    expect(runsOn(target)).toBe(
      "8 cards, 1 node of Gaudi 2; also one card (1 card, 1 node); documented: two-node FP8 (16 cards, 2 nodes, FP8)",
    );
  });
});

describe("gateThreshold", () => {
  it("states each gate's threshold from the manifest", () => {
    expect(
      gateThreshold(
        Gate.parse({ kind: "perplexity", reference: "the BF16 reference", max_relative_diff: 0.007 }),
      ),
    ).toBe("within 0.7% of the BF16 reference");
    expect(
      gateThreshold(Gate.parse({ kind: "needles", contexts: [16384, 131072], needles: 3, min_retrieved: 3 })),
    ).toBe("at least 3 of 3 needles retrieved at 16K, 128K tokens");
    expect(gateThreshold(Gate.parse({ kind: "kv-capacity", expected_ratio: 5.33, tolerance: 0.01 }))).toBe(
      "5.33x the token capacity of a full-attention KV layout, within 1%",
    );
  });
});
