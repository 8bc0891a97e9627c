import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoadedModel, readCorpus } from "../../../../src/engine/index.js";
import { expectEveryNeedle } from "../../../../src/gates/tests/every-needle.js";
import { type RunningServer, startServer } from "../../../../src/server/index.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("glm-5.3-flash");

// The manifest asks for 1K and 4K (run by `bringup up`); 256 and 512 keep this to seconds (latent
// attention's absorbed form reads 80 latent features per head and position).
const contexts = [256, 512];
let corpus: string;
let model: LoadedModel;
let server: RunningServer;

beforeAll(async () => {
  corpus = await readCorpus();
  const files = ref.retrievalFiles(1024);
  if (files === undefined) throw new Error("the port has no retrieval variant");
  model = ref.build("glm-retrieval", files);
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
  it("keeps the port's shape: KDA layers, latent-attention layers and mHC streams around the circuit", () => {
    const kinds = model.model.states().map((s) => Object.values(s).map((spec) => spec.kind));
    const kda = ["recurrent-state", "conv-tail", "conv-tail", "conv-tail"];
    expect(kinds).toEqual([kda, ["latent"], kda, ["latent"]]);
    expect(model.model.residual.streams).toBe(2);
  });

  it("retrieves every needle at every depth through the needles gate", async () => {
    await expectEveryNeedle(server.url, corpus, contexts);
  });
});
