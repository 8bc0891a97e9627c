import { afterAll, describe, expect, it } from "vitest";
import {
  findTinySize,
  generateTinyModel,
  kvCapacityRatio,
  readCorpus,
  type TinySize,
  tinyFilesToModel,
} from "../engine/index.js";
import { METRIC_NAMES, type RunningServer, startServer } from "./index.js";

// The tiny llama with three sliding-window layers (window 8) around one global layer.
const files = generateTinyModel(findTinySize("tiny") as TinySize, await readCorpus());
const model = await tinyFilesToModel("tiny-swa", {
  ...files,
  config: {
    ...files.config,
    layer_types: ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
    sliding_window: 8,
  },
});
const options = { model, port: 0, threads: 1, maxModelLen: 1024, kvCacheBytes: 2 << 20 };
const servers: RunningServer[] = [];
afterAll(() => Promise.all(servers.map((s) => s.close())));

async function metrics(server: RunningServer): Promise<(name: string) => number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return (name) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m").exec(text)?.[1]);
}

describe("the server's KV layout", () => {
  it("serves the same logprobs window-sized and full, with the capacity the formula gives, and frees every block", async () => {
    const ring = await startServer({ ...options, kvLayout: "window-sized" });
    servers.push(ring);
    const full = await startServer({ ...options, kvLayout: "full" });
    servers.push(full);
    expect([ring.limits.kvLayout, full.limits.kvLayout]).toEqual(["window-sized", "full"]);
    const body = JSON.stringify({
      prompt: "The lamp on the breakwater was lit at dusk, and the boats came in one by one",
      max_tokens: 12,
      temperature: 0,
      logprobs: 2,
      ignore_eos: true,
    });
    const ask = async (s: { url: string }) =>
      (await fetch(`${s.url}/v1/completions`, { method: "POST", body })).json() as Promise<{
        choices: [{ logprobs: { tokens: string[] } }];
      }>;
    const [windowed, whole] = await Promise.all([ask(ring), ask(full)]);
    expect(windowed.choices[0].logprobs).toEqual(whole.choices[0].logprobs);
    expect(windowed.choices[0].logprobs.tokens).toHaveLength(12);
    const [m0, m1] = await Promise.all([metrics(ring), metrics(full)]);
    const measured = m0(METRIC_NAMES.kvTokenCapacity) / m1(METRIC_NAMES.kvTokenCapacity);
    const theory = kvCapacityRatio(model.model.states(), "window-sized", "full", 16, 1024);
    expect(theory).toBeGreaterThan(3);
    expect(Math.abs(measured / theory - 1)).toBeLessThan(0.005);
    for (const m of [m0, m1]) {
      expect(m(METRIC_NAMES.kvBlocksUsed)).toBe(0);
      expect(m(METRIC_NAMES.kvUsage)).toBe(0);
    }
    expect(m0(METRIC_NAMES.kvBlocksTotal)).toBe(ring.limits.kvBlocks);
  });
});
