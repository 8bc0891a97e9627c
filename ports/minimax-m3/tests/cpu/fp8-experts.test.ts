import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, type LoadedModel, loadModel } from "../../../../src/engine/index.js";
import { writeTinyModel } from "../../../../src/engine/tiny/write.js";
import { convertCheckpoint, openCheckpoint } from "../../../../src/formats/index.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("minimax-m3");

const _config = ref.referenceConfig;

/** Every logprob of the vocabulary at every prompt position, then eight greedy tokens with theirs. */
async function scores(model: LoadedModel, options: { simd: boolean; threads: number }): Promise<unknown> {
  const engine = new Engine(model, { ...options, maxNumSeqs: 1 });
  const vocab = model.config.vocabSize;
  try {
    const prompt = model.tokenizer.encode("Salt tightens the gluten, so a dough salted early feels firmer.");
    const out: unknown[] = [];
    for await (const step of engine.submit({
      promptTokenIds: prompt,
      maxTokens: 8,
      promptLogprobs: vocab,
      logprobs: vocab,
      sampling: { temperature: 0 },
      ignoreEos: true,
    })) {
      out.push(step.promptLogprobs ?? null, step.token ?? null);
    }
    return out;
  } finally {
    await engine.close();
  }
}

describe("MiniMax-M3's experts converted exactly from MXFP4 to FP8", () => {
  let dir: string;
  let mxfp4: LoadedModel;
  let fp8: LoadedModel;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "minimax-fp8-"));
    await writeTinyModel(join(dir, "mxfp4"), ref.referenceFiles());
    await convertCheckpoint(join(dir, "mxfp4"), join(dir, "fp8"), {
      to: "fp8",
      fp8Block: "block32",
      workers: 0,
    });
    mxfp4 = await loadModel(join(dir, "mxfp4"));
    fp8 = await loadModel(join(dir, "fp8"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("stores them as FP8 E4M3 with a scale per 32 values, as stacked `.weight` tensors the config lists", async () => {
    const ck = await openCheckpoint(join(dir, "fp8"));
    try {
      const names = new Map(ck.tensors.map((t) => [t.name, t]));
      // Out of MXFP4 the experts keep its [experts, out, in] layout, which HF's bf16 reads the other way
      // round under gpt-oss's names: they leave under `<name>.weight`, listed in config.json.
      expect(names.get("model.layers.0.mlp.experts.gate_up_proj.weight")).toMatchObject({
        dtype: "F8_E4M3",
        shape: [4, 128, 64],
      });
      expect(names.get("model.layers.0.mlp.experts.gate_up_proj.weight_scale_inv")).toMatchObject({
        dtype: "F32",
        shape: [4, 128, 2],
      });
      expect(names.has("model.layers.0.mlp.experts.gate_up_proj_blocks")).toBe(false);
      expect(names.has("model.layers.0.mlp.experts.gate_up_proj")).toBe(false);
      const config = JSON.parse(await readFile(join(dir, "fp8", "config.json"), "utf8"));
      expect(config.stacked_weights.weights).toContain("model.layers.0.mlp.experts.gate_up_proj.weight");
    } finally {
      await ck.close();
    }
  });

  it("gives the MXFP4 build's logprobs bit for bit, on the fused SIMD kernels and on the plain ones", async () => {
    for (const options of [
      { simd: true, threads: 2 },
      { simd: false, threads: 1 },
    ]) {
      expect(await scores(fp8, options)).toEqual(await scores(mxfp4, options));
    }
  });
});
