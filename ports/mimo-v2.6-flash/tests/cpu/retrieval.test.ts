import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DecoderConfig, type LoadedModel, readCorpus } from "../../../../src/engine/index.js";
import { mimoRetrievalModel } from "../../../../src/engine/models/mimo.js";
import { expectEveryNeedle } from "../../../../src/gates/tests/every-needle.js";
import { type RunningServer, startServer } from "../../../../src/server/index.js";
import { loadFiles } from "./reference.js";

// The manifest asks for 16K and 32K (run by `bringup up`); two short lengths keep this to seconds.
const contexts = [1024, 2048];
let corpus: string;
let model: LoadedModel;
let server: RunningServer;

beforeAll(async () => {
  corpus = await readCorpus();
  model = await loadFiles(mimoRetrievalModel(corpus, { maxPositionEmbeddings: 4096 }), "mimo-retrieval");
  server = await startServer({ model, port: 0, threads: 1, maxNumSeqs: 1, kvLayout: "window-sized" });
});
afterAll(async () => {
  await server?.close();
});

describe("the retrieval variant", () => {
  it("is MiMo-shaped: a sliding layer with sinks, then one global head with a larger query/key than value", () => {
    const [sliding, global] = (model.config as DecoderConfig).layers.map((l) => l.attention);
    expect(sliding).toMatchObject({ kind: "sliding", window: 8, numHeads: 6, numKvHeads: 1, sinks: true });
    expect(global).toMatchObject({ kind: "full", numHeads: 1, numKvHeads: 1, headDim: 56, vHeadDim: 32 });
    expect(global?.partialRotaryFactor).toBeGreaterThan(0);
    expect(model.config.maxPositionEmbeddings).toBe(4096);
  });

  it("retrieves every needle at every depth through the needles gate, window-sized KV", async () => {
    await expectEveryNeedle(server.url, corpus, contexts);
  });
});
