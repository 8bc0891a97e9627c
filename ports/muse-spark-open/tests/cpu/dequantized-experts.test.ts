import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, type LoadedModel, loadModel } from "../../../../src/engine/index.js";
import { writeTinyModel } from "../../../../src/engine/tiny/write.js";
import { convertCheckpoint, openCheckpoint } from "../../../../src/formats/index.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("muse-spark-open");

/** Every logprob of the vocabulary at every prompt position, then eight greedy tokens with theirs. */
async function scores(model: LoadedModel, switches: Record<string, string> = {}): Promise<unknown> {
  const engine = new Engine(model, { threads: 2, maxNumSeqs: 1, switches });
  const vocab = model.config.vocabSize;
  try {
    const prompt = model.tokenizer.encode(
      "The harbour light turned twice before the ferry cleared the point.",
    );
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

// The perplexity gate's baseline: `weights convert --to bf16` dequantizes the MXFP4 experts (E2M1
// codes times a power of two fit BF16 exactly) and keeps every f32 tensor as it is.
describe("Muse Spark Open's latent experts dequantized from MXFP4 to BF16", () => {
  let dir: string;
  let mxfp4: LoadedModel;
  let bf16: LoadedModel;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "muse-spark-bf16-"));
    await writeTinyModel(join(dir, "mxfp4"), ref.referenceFiles());
    await convertCheckpoint(join(dir, "mxfp4"), join(dir, "bf16"), { to: "bf16", workers: 0 });
    mxfp4 = await loadModel(join(dir, "mxfp4"));
    bf16 = await loadModel(join(dir, "bf16"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("stores each expert as one BF16 matrix under its Nemotron-H name", async () => {
    const ck = await openCheckpoint(join(dir, "bf16"));
    try {
      const names = new Map(ck.tensors.map((t) => [t.name, t]));
      expect(names.get("model.layers.2.mlp.experts.5.up_proj.weight")).toMatchObject({
        dtype: "BF16",
        shape: [64, 32],
      });
      expect(names.has("model.layers.2.mlp.experts.5.up_proj.weight_blocks")).toBe(false);
      expect(names.get("model.layers.2.mlp.fc1_latent_proj.weight")?.dtype).toBe("F32");
    } finally {
      await ck.close();
    }
  });

  it("gives the fused and the unpacked MXFP4 paths' logits bit for bit", async () => {
    const want = await scores(bf16);
    expect(await scores(mxfp4, { mxfp4: "fused" })).toEqual(want);
    expect(await scores(mxfp4, { mxfp4: "unpacked" })).toEqual(want);
  });
});
