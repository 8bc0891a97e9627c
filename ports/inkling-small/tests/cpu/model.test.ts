import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoadedModel, readCorpus } from "../../../../src/engine/index.js";
import { parseInklingConfig } from "../../../../src/engine/models/inkling.js";
import { expectEveryNeedle } from "../../../../src/gates/tests/every-needle.js";
import { type RunningServer, startServer } from "../../../../src/server/index.js";
import { bringupErrorOf, portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("inkling-small");
const config = ref.referenceConfig;
const corpus = await readCorpus();

describe("Inkling-Small model code", () => {
  it("reads T5's bucket fields and Inkling's convolution and expert fields", () => {
    const c = parseInklingConfig(config);
    expect(c.attention).toEqual({
      numHeads: 4,
      numKvHeads: 2,
      headDim: 16,
      numBuckets: 16,
      maxDistance: 64,
      convKernel: 4,
    });
    expect(c.moe).toMatchObject({ numExperts: 4, topK: 2, intermediateSize: 32, scoring: "sigmoid" });
  });

  it("refuses a rotary embedding, shared experts and a bucket range with no logarithmic part or past the context, naming the field", () => {
    const parse = (json: unknown) => bringupErrorOf(() => parseInklingConfig(json, "config.json")).message;
    expect(parse({ ...config, rope_theta: 10000 })).toMatch(
      /^config\.json: rope_theta: .*no rotary embedding/,
    );
    expect(parse({ ...config, n_shared_experts: 1 })).toMatch(/^config\.json: n_shared_experts: /);
    expect(parse({ ...config, relative_attention_max_distance: 8 })).toMatch(
      /^config\.json: relative_attention_max_distance: 8 must exceed relative_attention_num_buckets \/ 2 = 8/,
    );
    expect(parse({ ...config, relative_attention_max_distance: 1e9 })).toMatch(
      /^config\.json: relative_attention_max_distance: 1000000000 exceeds max_position_embeddings 32768/,
    );
  });

  it("keeps every position's keys and values and each convolution's last three inputs per sequence", () => {
    const model = ref.referenceModel();
    expect(model.model.states()[0]).toEqual({
      kv: { kind: "full", numKvHeads: 2, headDim: 16, vHeadDim: 16 },
      kConv: { kind: "conv-tail", channels: 32, kernel: 4 },
      vConv: { kind: "conv-tail", channels: 32, kernel: 4 },
    });
  });

  it("refuses a bucket count or conv width that disagrees with the weights, in one line naming the tensor", () => {
    const files = ref.referenceFiles();
    const wrong = (fields: Record<string, unknown>) =>
      bringupErrorOf(() => ref.build("wrong", { ...files, config: { ...files.config, ...fields } }));
    const buckets = wrong({ relative_attention_num_buckets: 32 });
    expect(buckets.code).toBe("MODEL_WEIGHTS_MISMATCH");
    expect(buckets.message).toContain(
      "model.layers.0.self_attn.relative_attention_bias.weight has shape [16, 4] but config.json implies [32, 4]",
    );
    expect(buckets.message).not.toContain("\n");
    const conv = wrong({ sconv_kernel_size: 3 });
    expect(conv.code).toBe("MODEL_WEIGHTS_MISMATCH");
    expect(conv.message).toContain(
      "model.layers.0.self_attn.k_sconv.weight has shape [32, 1, 4] but config.json implies [32, 1, 3]",
    );
    expect(conv.message).not.toContain("\n");
  });
});

describe("the retrieval variant", () => {
  let model: LoadedModel;
  let server: RunningServer;
  beforeAll(async () => {
    model = ref.build("inkling-retrieval", ref.retrievalFiles(2048));
    server = await startServer({ model, port: 0, threads: 2, maxNumSeqs: 1 });
  });
  afterAll(() => server?.close());

  it("retrieves every needle at every depth, at contexts 16 and 32 times its last bucket's distance (32)", async () => {
    await expectEveryNeedle(server.url, corpus, [512, 1024]);
  });
});
