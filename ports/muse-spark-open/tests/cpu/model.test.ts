import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoadedModel, readCorpus } from "../../../../src/engine/index.js";
import { parseMuseSparkConfig } from "../../../../src/engine/models/muse-spark.js";
import { expectEveryNeedle } from "../../../../src/gates/tests/every-needle.js";
import { type RunningServer, startServer } from "../../../../src/server/index.js";
import { bringupErrorOf, portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("muse-spark-open");

const config = ref.referenceConfig;
const corpus = await readCorpus();

describe("Muse Spark Open model code", () => {
  it("reads interleaved sliding and global layers and Nemotron-H's latent MoE fields", () => {
    const c = parseMuseSparkConfig(config);
    expect(c.layers.map((l) => [l.kind, l.window])).toEqual([
      ["sliding", 64],
      ["full", 0],
      ["sliding", 64],
      ["full", 0],
    ]);
    expect(c.moe).toEqual({
      routing: {
        numExperts: 8,
        topK: 2,
        intermediateSize: 64,
        scoring: "sigmoid",
        normTopKProb: true,
        routedScalingFactor: 2.5,
        numGroups: 1,
        topKGroups: 1,
      },
      latentSize: 32,
      sharedIntermediateSize: 64,
      expertNormEps: 1e-5,
    });
  });

  it("gives sliding layers their own heads under MiMo-V2-Flash's swa_ fields, the global ones the base fields", () => {
    const c = parseMuseSparkConfig({ ...config, swa_num_attention_heads: 8, swa_num_key_value_heads: 1 });
    expect(c.layers.map((l) => [l.kind, l.numHeads, l.numKvHeads])).toEqual([
      ["sliding", 8, 1],
      ["full", 4, 2],
      ["sliding", 8, 1],
      ["full", 4, 2],
    ]);
  });

  it("refuses what it cannot honour, naming the field", () => {
    const error = (json: Record<string, unknown>) =>
      bringupErrorOf(() => parseMuseSparkConfig(json, "config.json"));
    expect(error({ ...config, mlp_hidden_act: "silu" })).toMatchObject({
      code: "MODEL_CONFIG_INVALID",
      message: expect.stringMatching(/^config\.json: mlp_hidden_act: /),
    });
    expect(error({ ...config, layer_types: Array(4).fill("sliding_attention") }).message).toMatch(
      /layer_types: has no full_attention layer/,
    );
    expect(error({ ...config, moe_latent_size: 48 }).message).toMatch(
      /^config\.json: moe_latent_size: 48 and moe_intermediate_size 64 must be multiples of 32/,
    );
    expect(error({ ...config, sliding_window: 65536 }).message).toMatch(
      /sliding_window: 65536 reaches max_position_embeddings 65536/,
    );
  });

  it("stores the routed experts in MXFP4 under Nemotron-H's names, with the port's own output norm, and keeps window-sized and full caches", () => {
    const files = ref.referenceFiles();
    const p = "model.layers.1.mlp";
    expect(files.tensors.get(`${p}.experts.3.up_proj.weight_blocks`)).toMatchObject({
      dtype: "U8",
      shape: [64, 1, 16],
    });
    expect(files.tensors.get(`${p}.experts.3.down_proj.weight_scales`)?.shape).toEqual([32, 2]);
    expect(files.tensors.get(`${p}.experts.3.output_norm.weight`)?.shape).toEqual([32]);
    expect(files.tensors.get(`${p}.fc1_latent_proj.weight`)?.shape).toEqual([32, 64]);
    expect(files.tensors.get(`${p}.fc2_latent_proj.weight`)?.shape).toEqual([64, 32]);
    expect(files.tensors.get(`${p}.shared_experts.up_proj.weight`)?.shape).toEqual([64, 64]);
    expect(files.tensors.get(`${p}.gate.e_score_correction_bias`)?.shape).toEqual([8]);
    const model = ref.build("spark", files);
    expect(model.model.switches.map((s) => s.name)).toContain("mxfp4");
    expect(model.model.states().map((s) => s.kv?.kind)).toEqual([
      "sliding-window",
      "full",
      "sliding-window",
      "full",
    ]);
  });

  it("refuses a checkpoint whose experts are narrower than moe_latent_size, naming the field and the tensor", () => {
    const files = ref.referenceFiles();
    const wide = { ...files, config: { ...files.config, moe_latent_size: 64 } };
    // The latent projections are rewritten to the wider latent; the experts keep their 32.
    const tensors = new Map(files.tensors);
    for (let i = 0; i < 4; i++) {
      const p = `model.layers.${i}.mlp`;
      tensors.set(`${p}.fc1_latent_proj.weight`, {
        dtype: "F32",
        shape: [64, 64],
        data: new Float32Array(64 * 64),
      });
      tensors.set(`${p}.fc2_latent_proj.weight`, {
        dtype: "F32",
        shape: [64, 64],
        data: new Float32Array(64 * 64),
      });
    }
    const { code, message } = bringupErrorOf(() => ref.build("wide", { ...wide, tensors }));
    expect(code).toBe("MODEL_WEIGHTS_MISMATCH");
    expect(message).toMatch(
      /^wide: moe_latent_size 64 does not match model\.layers\.0\.mlp\.experts\.0\.up_proj\.weight_blocks, whose latent width \(its cols\) is 32; set moe_latent_size/,
    );
    expect(message.split("\n")).toHaveLength(1);
  });
});

describe("the retrieval variant", () => {
  let model: LoadedModel;
  let server: RunningServer;
  beforeAll(async () => {
    model = ref.build("spark-retrieval", ref.retrievalFiles(4096));
    server = await startServer({ model, port: 0, threads: 2, maxNumSeqs: 1 });
  });
  afterAll(() => server?.close());

  it("retrieves every needle at every depth through the global layer, past the sliding window, with the latent MoE silenced", async () => {
    await expectEveryNeedle(server.url, corpus, [512, 2048]);
  });
});
