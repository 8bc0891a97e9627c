import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../catalog/index.js";
import { createTinyModel, findTinySize } from "../engine/index.js";
import { type RunningServer, startServer } from "../server/index.js";
import { runGateSession } from "./session.js";

let big: RunningServer;
let full: RunningServer;

beforeAll(async () => {
  const size = findTinySize("tiny");
  if (!size) throw new Error("tiny size missing");
  const model = await createTinyModel(size);
  // Twice the KV memory stands in for a layout that fits twice the tokens in the same memory.
  big = await startServer({ model, port: 0, threads: 1, kvCacheBytes: 8 * 2 ** 20 });
  full = await startServer({ model, port: 0, threads: 1, kvCacheBytes: 4 * 2 ** 20 });
});
afterAll(async () => {
  await big?.close();
  await full?.close();
});

const gate = (expected_ratio: number): GateSpec => ({ kind: "kv-capacity", expected_ratio, tolerance: 0.02 });

describe("KV capacity gate", () => {
  it("passes the ratio the layout promises against a full-attention reference endpoint", async () => {
    const { outcomes } = await runGateSession([gate(2)], { endpointUrl: big.url, referenceUrl: full.url });
    expect(outcomes[0]?.status).toBe("passed");
    expect(outcomes[0]?.measured?.ratio).toBeCloseTo(2, 2);
  });

  it("fails a wrong capacity claim, against an endpoint or a stated full-attention capacity", async () => {
    const ab = await runGateSession([gate(3)], { endpointUrl: big.url, referenceUrl: full.url });
    expect(ab.outcomes[0]?.status).toBe("failed");
    const capacity = ab.context.reference?.probe.kvTokenCapacity as number;
    const stated = await runGateSession([gate(1)], { endpointUrl: big.url, fullAttentionCapacity: capacity });
    expect(stated.outcomes[0]?.status).toBe("failed");
    expect(stated.outcomes[0]?.summary).toMatch(/expected 1x/);
  });

  it("with the layouts' own ratio at this context, passes only when the measurement is within tolerance of it too", async () => {
    const near = await runGateSession([gate(2)], {
      endpointUrl: big.url,
      referenceUrl: full.url,
      theoreticalRatio: 2.01,
    });
    expect(near.outcomes[0]?.status).toBe("passed");
    expect(near.outcomes[0]?.summary).toMatch(/the builds' 2\.010x by construction/);
    expect(near.outcomes[0]?.measured?.theoretical_ratio).toBe(2.01);
    const far = await runGateSession([gate(2)], {
      endpointUrl: big.url,
      referenceUrl: full.url,
      theoreticalRatio: 2.2,
    });
    expect(far.outcomes[0]?.status).toBe("failed");
  });

  it("is not run without a full-attention figure", async () => {
    const { outcomes } = await runGateSession([gate(2)], { endpointUrl: big.url });
    expect(outcomes[0]?.code).toBe("GATE_NEEDS_REFERENCE");
  });
});
