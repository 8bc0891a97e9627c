import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../../../../src/common/errors.js";
import { type LoadedModel, readCorpus } from "../../../../src/engine/index.js";
import { parseMinimaxConfig } from "../../../../src/engine/models/minimax-m3.js";
import { expectEveryNeedle } from "../../../../src/gates/tests/every-needle.js";
import { type RunningServer, startServer } from "../../../../src/server/index.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("minimax-m3");

const config = ref.referenceConfig;
const corpus = await readCorpus();

function errorOf(json: unknown): string {
  try {
    parseMinimaxConfig(json, "config.json");
  } catch (error) {
    if (isBringupError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error("the config parsed");
}

describe("MiniMax-M3 model code", () => {
  it("reads gpt-oss's fields: alternating sliding and full layers, sinks on the sliding ones, clamped experts", () => {
    const c = parseMinimaxConfig(config);
    expect(c.layers.map((l) => [l.kind, l.sinks])).toEqual([
      ["sliding", true],
      ["full", false],
      ["sliding", true],
      ["full", false],
    ]);
    expect(c.moe).toEqual({ numExperts: 4, topK: 2, intermediateSize: 64, limit: 7, alpha: 1.702 });
  });

  it("refuses sizes MXFP4 experts cannot hold and a layer list of the wrong length, naming the field", () => {
    expect(errorOf({ ...config, intermediate_size: 48 })).toMatch(
      /MODEL_CONFIG_INVALID.*hidden_size.*multiples of 32/,
    );
    expect(errorOf({ ...config, layer_types: ["full_attention"] })).toMatch(
      /layer_types: has 1 entries for 4/,
    );
  });

  it("writes its experts in MXFP4 under gpt-oss's names and reads them back", () => {
    const files = ref.referenceFiles();
    expect(files.tensors.get("model.layers.1.mlp.experts.gate_up_proj_blocks")).toMatchObject({
      dtype: "U8",
      shape: [4, 128, 2, 16],
    });
    expect(files.tensors.get("model.layers.1.mlp.experts.down_proj_scales")?.shape).toEqual([4, 64, 2]);
    expect(files.tensors.has("model.layers.1.mlp.experts.gate_up_proj")).toBe(false);
    const model = ref.build("mm", files);
    expect(model.model.states().map((s) => s.kv?.kind)).toEqual([
      "sliding-window",
      "full",
      "sliding-window",
      "full",
    ]);
  });
});

describe("the retrieval variant", () => {
  let model: LoadedModel;
  let server: RunningServer;
  beforeAll(async () => {
    const files = ref.retrievalFiles(2048);
    if (files === undefined) throw new Error("no retrieval variant");
    model = ref.build("mm-retrieval", files);
    server = await startServer({ model, port: 0, threads: 2, maxNumSeqs: 1 });
  });
  afterAll(() => server?.close());

  it("retrieves every needle at every depth with its experts silenced", async () => {
    await expectEveryNeedle(server.url, corpus, [512, 1024]);
  });
});
