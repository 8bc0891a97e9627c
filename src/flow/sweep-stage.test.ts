import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCatalog, type Reference } from "../catalog/index.js";
import { DEFAULT_SWEEP, describeSweep, sweepBlocked, sweepSize } from "./sweep-stage.js";

const REPO = join(import.meta.dirname, "../..");

async function mimoReference(): Promise<Reference> {
  const port = (await loadCatalog(REPO)).ports.find((p) => p.id === "mimo-v2.6-flash");
  return port?.manifest.reference as Reference;
}

describe("the sweep of a bring-up", () => {
  it("is small by default, sized by the options, and left out by false", () => {
    expect(sweepSize(undefined)).toEqual({
      concurrencies: [1, 2],
      requestsPerStream: 2,
      promptTokens: 128,
      outputTokens: 32,
    });
    expect(sweepSize({ concurrencies: [1, 4, 64] })).toEqual({
      ...DEFAULT_SWEEP,
      concurrencies: [1, 4, 64],
    });
    expect(sweepSize(false)).toBeUndefined();
  });

  it("says why a reference section cannot be swept", async () => {
    const reference = await mimoReference();
    expect(sweepBlocked(reference, DEFAULT_SWEEP)).toBeUndefined();
    const { baseline: _baseline, ...alone } = reference;
    expect(sweepBlocked(alone, DEFAULT_SWEEP)).toMatch(/no baseline build/);
    expect(sweepBlocked(reference, { ...DEFAULT_SWEEP, promptTokens: reference.max_model_len })).toMatch(
      /is 32800 tokens, beyond the reference max_model_len 32768/,
    );
  });

  it("describes a sweep by its points and its records' id", () => {
    const point = { ttftMedianMs: 40, tpotMedianMs: 5, failed: 0 };
    expect(
      describeSweep({
        id: "p/sweep-20261204-070000",
        points: [
          { ...point, arm: "full KV layout", concurrency: 1, outputTokPerS: 90 },
          { ...point, arm: "window-sized KV layout", concurrency: 1, outputTokPerS: 95 },
          { ...point, arm: "window-sized KV layout", concurrency: 2, outputTokPerS: 150.04 },
          { ...point, arm: "full KV layout", concurrency: 2, outputTokPerS: 140 },
        ],
      }),
    ).toBe(
      "4 points at concurrency 1,2; output tok/s at 2: window-sized KV layout 150.0, full KV layout 140.0; records p/sweep-20261204-070000-*",
    );
  });
});
