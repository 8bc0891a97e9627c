import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoadedModel, readCorpus, tinyFilesToModel } from "../../../../src/engine/index.js";
import { expectEveryNeedle } from "../../../../src/gates/tests/every-needle.js";
import { type RunningServer, startServer } from "../../../../src/server/index.js";
import { portModel } from "../../model.js";

// The manifest asks for 1K and 4K (run by `bringup up`); 512 and 1K keep this to seconds.
const contexts = [512, 1024];
let corpus: string;
let model: LoadedModel;
let server: RunningServer;

beforeAll(async () => {
  corpus = await readCorpus();
  const files = portModel.retrievalModel?.(corpus, { maxPositionEmbeddings: 2048 });
  if (files === undefined) throw new Error("the port has no retrieval variant");
  model = tinyFilesToModel("glm-retrieval", files, [portModel.architecture]);
  server = await startServer({
    model,
    port: 0,
    threads: 2,
    maxNumSeqs: 1,
    switches: { kda_prefill: "chunked" },
  });
});
afterAll(async () => {
  await server?.close();
});

describe("the retrieval variant", () => {
  it("keeps the port's shape: KDA layers, full-attention layers and mHC streams around the circuit", () => {
    const kinds = model.model.states().map((s) => Object.values(s).map((spec) => spec.kind));
    const kda = ["recurrent-state", "conv-tail", "conv-tail", "conv-tail"];
    expect(kinds).toEqual([kda, ["full"], kda, ["full"]]);
    expect(model.model.residual.streams).toBe(2);
  });

  it("retrieves every needle at every depth through the needles gate", async () => {
    await expectEveryNeedle(server.url, corpus, contexts);
  });
});
