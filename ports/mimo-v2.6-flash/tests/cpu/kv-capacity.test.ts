import { describe, expect, it } from "vitest";
import { Engine, kvCapacityRatio } from "../../../../src/engine/index.js";
import { parseMimoConfig } from "../../../../src/engine/models/mimo.js";
import { portReference } from "../../../../test/helpers/port-reference.js";
import { loadFiles, referenceConfig } from "./reference.js";

const ref = await portReference("mimo-v2.6-flash");

const BLOCK = 16;

describe("KV capacity of the tiny reference config", () => {
  it("approaches 16/3 against the full layout as the context grows, within the gate's 2% at 32K", async () => {
    const states = ref.architecture.states(parseMimoConfig(await referenceConfig()), new Map());
    const contexts = [256, 1024, 4096, 32768, 1048576];
    const ratios = contexts.map((c) => kvCapacityRatio(states, "window-sized", "full", BLOCK, c));
    for (let i = 1; i < ratios.length; i++)
      expect(ratios[i] as number).toBeGreaterThan(ratios[i - 1] as number);
    for (const r of ratios) expect(r).toBeLessThan(16 / 3);
    expect(Math.abs((ratios[3] as number) / 5.33 - 1)).toBeLessThanOrEqual(0.02);
    expect(16 / 3 - (ratios[4] as number)).toBeLessThan(0.005);
    // Written out: 16 layers of 80 floats per token under full storage; window-sized keeps 3 global
    // layers whole and 13 rings, each one circular run of blocks holding the window and a 64-token
    // chunk in flight (64 + 64 - 1 positions).
    const blocks = Math.ceil(32768 / BLOCK);
    const ring = Math.ceil((64 + 64 - 1) / BLOCK);
    expect(ratios[3]).toBeCloseTo((16 * blocks) / (3 * blocks + 13 * ring), 12);
  });

  it("is what the engine's own capacity accounting gives for one KV budget", async () => {
    const model = await loadFiles(ref.referenceFiles(), "mimo-tiny");
    const maxModelLen = 32768;
    // Room for two max-length sequences under the full layout: 16 layers x 80 floats x 4 bytes a token.
    const kvCacheBytes = 2 * maxModelLen * 16 * 80 * 4;
    const capacity = async (kvLayout: "window-sized" | "full") => {
      const e = new Engine(model, { threads: 1, maxModelLen, blockSize: BLOCK, kvCacheBytes, kvLayout });
      const tokens = e.limits.kvTokenCapacity;
      await e.close();
      return tokens;
    };
    const full = await capacity("full");
    const windowSized = await capacity("window-sized");
    expect(full).toBe(2 * maxModelLen);
    const theory = kvCapacityRatio(model.model.states(), "window-sized", "full", BLOCK, maxModelLen);
    expect(Math.abs(windowSized / full / theory - 1)).toBeLessThan(0.005);
  });
});
