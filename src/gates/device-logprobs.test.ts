import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../catalog/index.js";
import { createTinyModel, findTinySize, readCorpus } from "../engine/index.js";
import { type RunningServer, startServer } from "../server/index.js";
import { greedyClose } from "./device-logprobs.js";
import { runGateSession } from "./session.js";

const spec: GateSpec = {
  kind: "device-logprobs",
  device: "a second engine",
  max_logprob_diff: 1e-4,
  top_k: 5,
  served: ["every layer"],
};
const servers: RunningServer[] = [];
let reference: RunningServer;
let same: RunningServer;
let other: RunningServer;
let corpus: string;

beforeAll(async () => {
  const size = findTinySize("tiny");
  if (!size) throw new Error("tiny size missing");
  corpus = await readCorpus();
  const model = await createTinyModel(size);
  // Other weights, same tokenizer (it is trained on the corpus, not drawn from the seed).
  const reseeded = await createTinyModel(size, { seed: 7 });
  reference = await startServer({ model, port: 0, threads: 1 });
  same = await startServer({ model, port: 0, threads: 1 });
  other = await startServer({ model: reseeded, port: 0, threads: 1 });
  servers.push(reference, same, other);
});
afterAll(async () => {
  for (const s of servers) await s.close();
});

describe("device-logprobs gate", () => {
  it("passes an endpoint serving the same weights, with no difference at all", async () => {
    const { outcomes } = await runGateSession([spec], {
      endpointUrl: same.url,
      referenceUrl: reference.url,
      corpus,
    });
    const outcome = outcomes[0];
    expect(outcome?.status).toBe("passed");
    expect(outcome?.value).toBe(0);
    expect(outcome?.arms?.[0]?.samples).toHaveLength(3);
    expect(outcome?.summary).toMatch(/3 greedy continuations of 16 tokens close/);
  });

  it("fails an endpoint whose model differs, naming the difference against the limit", async () => {
    const { outcomes } = await runGateSession([spec], {
      endpointUrl: other.url,
      referenceUrl: reference.url,
      corpus,
    });
    const outcome = outcomes[0];
    expect(outcome?.status).toBe("failed");
    expect(outcome?.value).toBeGreaterThan(1e-4);
    expect(outcome?.summary).toMatch(/limit 0\.0001/);
  });

  it("scores windows of the spec's window_tokens (longer than a sparse top-k, say)", async () => {
    const { outcomes } = await runGateSession([{ ...spec, window_tokens: 96 }], {
      endpointUrl: same.url,
      referenceUrl: reference.url,
      corpus,
    });
    const outcome = outcomes[0];
    expect(outcome?.status).toBe("passed");
    expect(outcome?.measured).toMatchObject({ window_tokens: 96, scored_tokens: 3 * 95 });
  });

  it("does not run without a reference endpoint", async () => {
    const { outcomes } = await runGateSession([spec], { endpointUrl: same.url, corpus });
    expect(outcomes[0]?.status).toBe("not-run");
    expect(outcomes[0]?.code).toBe("GATE_NEEDS_REFERENCE");
  });
});

describe("greedyClose", () => {
  const run = (tokens: string[], top: Record<string, number>[] = tokens.map((t) => ({ [t]: -1 }))) => ({
    tokens,
    logprobs: tokens.map(() => -1),
    top,
  });

  it("compares token ids, so equal ids pass and different ids outside the top-k do not", () => {
    const ids = ["token_id:7", "token_id:300", "token_id:9"];
    expect(greedyClose(run(ids), run(ids))).toBeUndefined();
    expect(greedyClose(run(ids), run(["token_id:7", "token_id:301", "token_id:9"]))).toMatch(
      /^position 1: device "token_id:300" is not in the reference's top-k/,
    );
  });

  it("accepts a first difference where each token is in the other's top-k, and stops comparing there", () => {
    const device = run(["a", "x", "q"], [{ a: -1 }, { x: -1, y: -1.1 }, { q: -1 }]);
    const reference = run(["a", "y", "r"], [{ a: -1 }, { y: -1, x: -1.1 }, { r: -1 }]);
    expect(greedyClose(device, reference)).toBeUndefined();
  });

  it("names the position where a token is missing from the other's top-k", () => {
    const device = run(["a", "x"], [{ a: -1 }, { x: -1, y: -2 }]);
    const reference = run(["a", "y"], [{ a: -1 }, { y: -1, z: -2 }]);
    expect(greedyClose(device, reference)).toMatch(/^position 1: device "x" is not in the reference's top-k/);
  });
});
