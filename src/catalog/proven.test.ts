import { describe, expect, it } from "vitest";
import { fixtureManifest } from "../recipes/fixtures/index.js";
import type { BenchRecord } from "../records/index.js";
import { record } from "../site/tests/fixture.js";
import type { LoadedPort } from "./load.js";
import { provenLevels, provenSummary } from "./proven.js";

function gate(id: string, status: "passed" | "failed", at = "2026-01-01T00:00:00Z"): BenchRecord {
  return record(id, {
    label: `perplexity over 4 windows: gate ${status}`,
    source: { kind: "measured", tool: "bringup gate", command: "bringup gate" },
    arms: [{ name: "port", samples: [1] }],
    recorded_at: at,
  });
}

async function lazyPort(records: BenchRecord[]): Promise<LoadedPort> {
  const manifest = await fixtureManifest("complete-lazy");
  return { id: manifest.id, dir: "/r/ports/fixture-lazy", manifest, readme: "", records };
}

const states = (port: LoadedPort, runs: Record<string, string[]> = {}) =>
  provenLevels(port, runs).map(
    (proof) => `${proof.level} ${proof.state} ${proof.records.map((r) => r.id).join(",")}`,
  );

describe("provenLevels", () => {
  it("proves nothing of a port without engine model code", async () => {
    const manifest = await fixtureManifest("no-model-code");
    const port = { id: manifest.id, dir: "/r", manifest, readme: "", records: [] };
    expect(provenSummary(provenLevels(port))).toBe("no engine model code");
  });

  it("holds the engine level on the latest run of each reference gate", async () => {
    expect(states(await lazyPort([]))).toEqual(["engine none ", "vllm-cpu none ", "device none "]);
    const passed = gate("fixture-lazy/reference-perplexity", "passed");
    expect(states(await lazyPort([passed]))[0]).toBe("engine passed fixture-lazy/reference-perplexity");
    const failedLater = gate("fixture-lazy/reference-perplexity.2", "failed");
    expect(states(await lazyPort([passed, failedLater]))[0]).toBe(
      "engine failed fixture-lazy/reference-perplexity.2",
    );
  });

  it("holds the vLLM-on-CPU level on the latest device-logprobs gate record, and the device level on recorded device runs", async () => {
    const early = gate("fixture-lazy/gate-device-logprobs-20260101t000000000z-0", "failed");
    const late = gate(
      "fixture-lazy/gate-device-logprobs-20260102t000000000z-0",
      "passed",
      "2026-01-02T00:00:00Z",
    );
    const other = gate(
      "fixture-lazy/gate-perplexity-20260103t000000000z-0",
      "failed",
      "2026-01-03T00:00:00Z",
    );
    const run = gate("fixture-lazy/device-run", "passed");
    const port = await lazyPort([late, early, other, run]);
    expect(states(port).slice(1)).toEqual([`vllm-cpu passed ${late.id}`, "device none "]);
    expect(states(port, { "fixture-lazy": [run.id] })[2]).toBe(`device passed ${run.id}`);
    expect(states(port, { "fixture-lazy": [run.id, "fixture-lazy/missing"] })[2]).toBe(
      `device partial ${run.id}`,
    );
  });

  it("adds the blocks level only for a port checked block by block, held on its latest record", async () => {
    const port = await lazyPort([]);
    const reference = port.manifest.reference as NonNullable<typeof port.manifest.reference>;
    const blocks = {
      test: "tests/test_demo_blocks.py",
      not_served: "no vLLM cache for its state",
      blocks: ["the recurrence"],
      record: "fixture-lazy/device-blocks",
    };
    const checked = (records: BenchRecord[]) => ({
      ...port,
      manifest: { ...port.manifest, reference: { ...reference, device_blocks: blocks } },
      records,
    });
    expect(states(checked([]))).toEqual(["engine none ", "vllm-cpu none ", "blocks none ", "device none "]);
    const first = gate("fixture-lazy/device-blocks", "passed");
    const second = gate("fixture-lazy/device-blocks.2", "failed");
    expect(states(checked([first]))[2]).toBe(`blocks passed ${first.id}`);
    expect(states(checked([first, second]))[2]).toBe(`blocks failed ${second.id}`);
  });
});
