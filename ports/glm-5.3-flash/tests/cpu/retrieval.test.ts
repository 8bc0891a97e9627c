import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../../../../src/catalog/index.js";
import { type LoadedModel, readCorpus, tinyFilesToModel } from "../../../../src/engine/index.js";
import { runGateSession } from "../../../../src/gates/index.js";
import { type RunningServer, startServer } from "../../../../src/server/index.js";
import { portModel } from "../../model.js";

// The manifest asks for 1K and 4K (run by `bringup up`); 512 and 1K keep this to seconds.
const contexts = [512, 1024];
const spec: GateSpec = { kind: "needles", contexts: [1024, 4096], needles: 3, min_retrieved: 3 };
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
    expect(model.model.states.map((s) => s.kind)).toEqual(["slot", "paged", "slot", "paged"]);
    expect(model.model.residual.streams).toBe(2);
  });

  it("retrieves every needle at every depth through the needles gate", async () => {
    const { outcomes } = await runGateSession([spec], {
      endpointUrl: server.url,
      corpus,
      needleContexts: contexts,
      needleAnswerTokens: 12,
    });
    const [outcome] = outcomes;
    expect(outcome?.status).toBe("passed");
    expect(outcome?.grid).toEqual({
      depths: [0.25, 0.5, 0.75],
      rows: contexts.map((context) => ({ context, retrieved: [true, true, true] })),
    });
  });
});
