import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../catalog/index.js";
import { probeEndpoint } from "../client/index.js";
import { startTestServer } from "../client/test-servers.js";
import { createTinyModel, findTinySize } from "../engine/index.js";
import { type RunningServer, startServer } from "../server/index.js";
import { writeGoldenDecodes } from "./golden.js";
import { runGateSession } from "./session.js";

type Compare = "two-builds" | "batch-invariance" | "golden";
const decodeGate = (
  compare: Compare,
  sampling: ("greedy" | "seeded")[] = ["greedy", "seeded"],
): GateSpec => ({
  kind: "bit-identical-decode",
  compare,
  sampling,
});
const twoBuilds = decodeGate("two-builds");
const closers: { close(): Promise<void> }[] = [];
let a: RunningServer;
let b: RunningServer;

beforeAll(async () => {
  const size = findTinySize("tiny");
  if (!size) throw new Error("tiny size missing");
  const model = await createTinyModel(size);
  a = await startServer({ model, port: 0, threads: 1 });
  b = await startServer({ model, port: 0, threads: 1 });
  closers.push(a, b);
});
afterAll(async () => {
  for (const c of closers.reverse()) await c.close();
});

describe("bit-identical decode gate", () => {
  it("passes two servers of one model, greedy and seeded, and one server batched vs one at a time", async () => {
    const ab = await runGateSession([twoBuilds], { endpointUrl: a.url, referenceUrl: b.url });
    expect(ab.outcomes[0]?.status).toBe("passed");
    expect(ab.outcomes[0]?.summary).toMatch(/^8\/8 decodes bit-identical/);
    const batch = decodeGate("batch-invariance");
    const one = await runGateSession([batch], { endpointUrl: a.url });
    expect(one.outcomes[0]?.status).toBe("passed");
    const crowd = await runGateSession([{ ...batch, concurrent: 16 } as GateSpec], { endpointUrl: a.url });
    expect(crowd.outcomes[0]?.summary).toMatch(/^16\/16 decodes bit-identical \(one at a time vs 16 at once/);
    expect(crowd.outcomes[0]?.status).toBe("passed");
  });

  it("fails an endpoint whose sampler ignores the seed (nondeterministic)", async () => {
    const unseeded = await startTestServer({
      upstream: a.url,
      rewriteRequest: (_path, body) => ({ ...(body as object), seed: undefined }),
    });
    closers.push(unseeded);
    const seeded = decodeGate("two-builds", ["seeded"]);
    const { outcomes } = await runGateSession([seeded], { endpointUrl: unseeded.url, referenceUrl: b.url });
    expect(outcomes[0]?.status).toBe("failed");
    expect(outcomes[0]?.arms?.[0]?.samples.some((s) => s > 0)).toBe(true);
  });

  it("compares with a golden file written from a trusted build, and is not run without one", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bringup-golden-"));
    try {
      const golden = join(dir, "golden.json");
      const trusted = await probeEndpoint(b.url);
      await writeGoldenDecodes(trusted.endpoint, ["greedy", "seeded"], golden);
      const same = await runGateSession([decodeGate("golden")], { endpointUrl: a.url, goldenFile: golden });
      expect(same.outcomes[0]?.status).toBe("passed");
      const unseeded = await startTestServer({
        upstream: a.url,
        rewriteRequest: (_path, body) => ({ ...(body as object), seed: undefined }),
      });
      closers.push(unseeded);
      const drifted = await runGateSession([decodeGate("golden", ["seeded"])], {
        endpointUrl: unseeded.url,
        goldenFile: golden,
      });
      expect(drifted.outcomes[0]?.status).toBe("failed");
      const missing = await runGateSession([decodeGate("golden")], {
        endpointUrl: a.url,
        goldenFile: join(dir, "none.json"),
      });
      expect(missing.outcomes[0]?.code).toBe("GOLDEN_MISSING");
      const noPath = await runGateSession([decodeGate("golden")], { endpointUrl: a.url });
      expect(noPath.outcomes[0]?.code).toBe("GATE_NEEDS_GOLDEN");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("is not run without the other build", async () => {
    const alone = await runGateSession([twoBuilds], { endpointUrl: a.url });
    expect(alone.outcomes[0]?.code).toBe("GATE_NEEDS_REFERENCE");
  });
});
