import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../../../../src/catalog/index.js";
import { type LoadedModel, MlaAttention, readCorpus } from "../../../../src/engine/index.js";
import { RETRIEVAL_TOP_K } from "../../../../src/engine/models/deepseek-v3.js";
import { runGateSession } from "../../../../src/gates/index.js";
import { type RunningServer, startServer } from "../../../../src/server/index.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

const ref = await portReference("glm-5-mxfp4");

// The manifest asks for 1K to 8K (run by `bringup up`); 256 and 512 keep this to seconds, still
// 8 and 16 times the top-k.
const contexts = [256, 512];
const spec: GateSpec = { kind: "needles", contexts, needles: 3, min_retrieved: 3 };
let corpus: string;
let model: LoadedModel;
const servers: RunningServer[] = [];

beforeAll(async () => {
  corpus = await readCorpus();
  const files = ref.retrievalFiles(1024);
  if (files === undefined) throw new Error("the port has no retrieval variant");
  model = ref.build("glm5-retrieval", files);
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function needles(switches: Record<string, string>) {
  const server = await startServer({ model, port: 0, threads: 2, maxNumSeqs: 1, switches });
  servers.push(server);
  const { outcomes } = await runGateSession([spec], {
    endpointUrl: server.url,
    corpus,
    needleContexts: contexts,
    needleAnswerTokens: 12,
  });
  return outcomes[0];
}

describe("the retrieval variant", () => {
  it("is latent attention with a DSA indexer in both layers, attending 32 tokens", () => {
    for (const layer of model.model.layers) {
      expect(layer.mixer).toBeInstanceOf(MlaAttention);
      expect((layer.mixer as MlaAttention).indexer?.spec.topK).toBe(RETRIEVAL_TOP_K);
    }
  });

  it("retrieves every needle at every depth with the exact and the FP8 indexer", async () => {
    for (const dsa_indexer of ["exact", "fp8"]) {
      const outcome = await needles({ dsa_indexer });
      expect(outcome?.status).toBe("passed");
      expect(outcome?.grid).toEqual({
        depths: [0.25, 0.5, 0.75],
        rows: contexts.map((context) => ({ context, retrieved: [true, true, true] })),
      });
    }
  });
});
