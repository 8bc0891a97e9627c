import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Engine, loadModel } from "../engine/index.js";
import { openSafetensors } from "../formats/index.js";
import { DEVICE_BLOCKS_FORMAT, deviceBlocks, isPrefillThenDecode } from "./device-blocks.js";

const ROOT = join(import.meta.dirname, "../..");
const dir = await mkdtemp(join(tmpdir(), "bringup-device-blocks-"));
afterAll(() => rm(dir, { recursive: true, force: true }));

const PORT = "glm-5.3-flash";
const T = 12;
const D = 2;

describe("bringup device blocks", () => {
  it("writes the embeddings, every layer's two outputs and logits the untapped engine agrees with", async () => {
    const out = join(dir, "blocks.safetensors");
    const result = await deviceBlocks({ root: ROOT, portId: PORT, out, tokens: T, decode: D });
    const file = await openSafetensors(out);
    const model = await loadModel(result.modelDir);
    const layers = model.model.layers.length;
    const width = model.model.residual.streams * model.model.hiddenSize;
    expect(file.metadata).toMatchObject({
      format: DEVICE_BLOCKS_FORMAT,
      port: PORT,
      model_dir: result.modelDir,
    });
    expect(file.tensors.map((t) => t.name)).toEqual([
      "input_ids",
      "embed",
      ...Array.from({ length: layers }, (_, l) => [`layers.${l}.mixer`, `layers.${l}.ffn`]).flat(),
      "logits",
    ]);
    expect(file.tensor("layers.0.mixer").shape).toEqual([T + D, width]);
    const ids = [...new Int32Array((await file.readTensor("input_ids")).slice().buffer)];
    const bytes = (await file.readTensor("logits")).slice();
    const logits = new Float32Array(bytes.buffer);
    await file.close();

    // The same prompt through an engine without a tap: its prompt logprobs are the dump's logits'.
    const V = model.model.vocabSize;
    // Each decode step fed the greedy token of the row before it.
    for (let p = T - 1; p < T + D - 1; p++) {
      const row = [...logits.subarray(p * V, (p + 1) * V)];
      expect(ids[p + 1]).toBe(row.indexOf(Math.max(...row)));
    }
    const engine = new Engine(model, { maxNumSeqs: 1, maxModelLen: 256 });
    let prompt: readonly ({ logprob: number } | null)[] = [];
    try {
      const request = {
        promptTokenIds: ids.slice(0, T),
        maxTokens: 1,
        promptLogprobs: 0,
        sampling: { temperature: 0 },
      };
      for await (const step of engine.submit(request)) prompt = step.promptLogprobs ?? prompt;
    } finally {
      await engine.close();
    }
    const logprobs = prompt.filter((p) => p !== null).map((p) => p.logprob);
    expect(logprobs).toHaveLength(T - 1);
    logprobs.forEach((expected, p) => {
      const row = logits.subarray(p * V, (p + 1) * V);
      const max = Math.max(...row);
      const logSum = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
      expect((row[ids[p + 1] as number] as number) - logSum).toBeCloseTo(expected, 5);
    });
  });

  it("refuses a prompt of fewer than two tokens by name", async () => {
    await expect(
      deviceBlocks({ root: ROOT, portId: PORT, out: join(dir, "none.safetensors"), tokens: 1 }),
    ).rejects.toMatchObject({ code: "DEVICE_BLOCKS_TOKENS" });
  });

  it("joins DeepSeek-V4's prefill, which the engine runs in 32-row steps", async () => {
    const out = join(dir, "v4.safetensors");
    const result = await deviceBlocks({
      root: ROOT,
      portId: "deepseek-v4.1-flash",
      out,
      tokens: 40,
      decode: 1,
    });
    const file = await openSafetensors(out);
    const model = await loadModel(result.modelDir);
    const width = model.model.residual.streams * model.model.hiddenSize;
    expect(file.metadata).toMatchObject({ prefill: "40" });
    expect(file.tensor("layers.0.mixer").shape).toEqual([41, width]);
    expect(file.tensor("logits").shape).toEqual([41, model.model.vocabSize]);
    await file.close();
  });

  it("joins a prefill run in several steps, and nothing else", () => {
    expect(isPrefillThenDecode([100, 1, 1, 1, 1], 100, 4)).toBe(true);
    expect(isPrefillThenDecode([32, 32, 32, 4, 1, 1, 1, 1], 100, 4)).toBe(true);
    expect(isPrefillThenDecode([32, 32, 32, 1, 1, 1, 1, 1], 97, 4)).toBe(true);
    expect(isPrefillThenDecode([32, 32, 32, 4], 100, 0)).toBe(true);
    // A step crossing the prompt's end, a missing or extra decode step, a decode step of two rows.
    expect(isPrefillThenDecode([32, 32, 32, 5, 1, 1, 1], 100, 4)).toBe(false);
    expect(isPrefillThenDecode([32, 32, 32, 4, 1, 1, 1], 100, 4)).toBe(false);
    expect(isPrefillThenDecode([32, 32, 32, 4, 1, 1, 1, 1, 1], 100, 4)).toBe(false);
    expect(isPrefillThenDecode([32, 32, 32, 4, 2, 1, 1], 100, 4)).toBe(false);
    expect(isPrefillThenDecode([32, 32], 100, 4)).toBe(false);
  });
});
