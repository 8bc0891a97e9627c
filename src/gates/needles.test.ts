import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../catalog/index.js";
import { createRetrievalModel, readCorpus } from "../engine/index.js";
import { type RunningServer, startServer } from "../server/index.js";
import { needle, needleDepths } from "./needles.js";
import { runGateSession } from "./session.js";

// The manifest's lengths (16K to 1M) are for real hardware; here two short ones keep it to seconds.
const contexts = [256, 512];
const spec: GateSpec = { kind: "needles", contexts: [16384, 131072], needles: 3, min_retrieved: 3 };
let corpus: string;
let retrieval: RunningServer;
let random: RunningServer;

beforeAll(async () => {
  corpus = await readCorpus();
  retrieval = await startServer({ model: await createRetrievalModel(), port: 0, threads: 1 });
  random = await startServer({ tinySize: "tiny", port: 0, threads: 1 });
});
afterAll(async () => {
  await retrieval?.close();
  await random?.close();
});

describe("needles gate", () => {
  it("passes the constructed retrieval model at every length and depth", async () => {
    const { outcomes } = await runGateSession([spec], {
      endpointUrl: retrieval.url,
      corpus,
      needleContexts: contexts,
      needleAnswerTokens: 12,
    });
    const [outcome] = outcomes;
    expect(outcome?.summary).toMatch(/^6\/6 needles/);
    expect(outcome?.status).toBe("passed");
    // Each prompt is built to the exact length, less the answer budget, as the server counted it.
    expect(outcome?.measured?.prompt_tokens).toEqual(contexts.map((c) => c - 12));
    expect(outcome?.grid).toEqual({
      depths: [0.25, 0.5, 0.75],
      rows: contexts.map((context) => ({ context, retrieved: [true, true, true] })),
    });
  });

  it("fails a random-weight model on the same gate", async () => {
    const { outcomes } = await runGateSession([spec], {
      endpointUrl: random.url,
      corpus,
      needleContexts: contexts,
      needleAnswerTokens: 12,
    });
    expect(outcomes[0]?.status).toBe("failed");
    expect(outcomes[0]?.value).toBe(0);
  });

  it("refuses lengths beyond what the endpoint serves, as not run", async () => {
    const { outcomes } = await runGateSession([spec], { endpointUrl: random.url, corpus });
    expect(outcomes[0]?.status).toBe("not-run");
    expect(outcomes[0]?.code).toBe("CONTEXT_BEYOND_ENDPOINT");
  });

  it("derives needles and depths deterministically", () => {
    expect(needleDepths(3)).toEqual([0.25, 0.5, 0.75]);
    expect(needle(0)).toEqual(needle(0));
    expect(needle(0).value).toMatch(/^\d{7}$/);
    expect(new Set([0, 1, 2].map((k) => needle(k).key)).size).toBe(3);
  });
});
