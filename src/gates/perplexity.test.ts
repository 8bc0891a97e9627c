import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../catalog/index.js";
import { findTinySize, generateTinyModel, readCorpus, writeTinyModel } from "../engine/index.js";
import { type RunningServer, startServer } from "../server/index.js";
import { runGateSession } from "./session.js";

const spec: GateSpec = { kind: "perplexity", reference: "the unconverted model", max_relative_diff: 0.01 };
const small = { windowTokens: 128, windows: 2 };
let corpus: string;
let dir: string;
const servers: RunningServer[] = [];
let model: RunningServer;
let twin: RunningServer;
let perturbed: RunningServer;

beforeAll(async () => {
  corpus = await readCorpus();
  dir = await mkdtemp(join(tmpdir(), "bringup-ppl-"));
  const size = findTinySize("tiny");
  if (!size) throw new Error("tiny size missing");
  const files = generateTinyModel(size, corpus);
  // The perturbation: the LM head scaled up, so the model is confidently wrong where it was unsure.
  const tensors = new Map(files.tensors);
  const head = tensors.get("lm_head.weight");
  if (!head) throw new Error("lm_head missing");
  tensors.set("lm_head.weight", { ...head, data: (head.data as Float32Array).map((v) => v * 40) });
  await writeTinyModel(join(dir, "tiny"), files);
  await writeTinyModel(join(dir, "perturbed"), { ...files, tensors });
  model = await startServer({ modelDir: join(dir, "tiny"), port: 0, threads: 1 });
  twin = await startServer({ modelDir: join(dir, "tiny"), port: 0, threads: 1 });
  perturbed = await startServer({ modelDir: join(dir, "perturbed"), port: 0, threads: 1 });
  servers.push(model, twin, perturbed);
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await rm(dir, { recursive: true, force: true });
});

describe("perplexity gate", () => {
  it("passes the same model against itself as a reference endpoint, and records both arms", async () => {
    const { outcomes } = await runGateSession([spec], {
      endpointUrl: model.url,
      referenceUrl: twin.url,
      corpus,
      ...small,
    });
    const [outcome] = outcomes;
    expect(outcome?.status).toBe("passed");
    expect(outcome?.measured?.relative_diff).toBe(0);
    expect(outcome?.arms?.map((a) => a.samples.length)).toEqual([2, 2]);
  });

  it("fails a perturbed model against the unperturbed reference, and against its recorded value", async () => {
    const first = await runGateSession([spec], { endpointUrl: model.url, corpus, ...small });
    expect(first.outcomes[0]?.status).toBe("not-run");
    expect(first.outcomes[0]?.code).toBe("GATE_NEEDS_REFERENCE");
    const ab = await runGateSession([spec], {
      endpointUrl: perturbed.url,
      referenceUrl: model.url,
      corpus,
      ...small,
    });
    expect(ab.outcomes[0]?.status).toBe("failed");
    const passing = await runGateSession([spec], {
      endpointUrl: twin.url,
      referenceUrl: model.url,
      corpus,
      ...small,
    });
    const recorded = passing.outcomes[0]?.measured?.perplexity as number;
    const byValue = await runGateSession([spec], {
      endpointUrl: perturbed.url,
      referenceValue: recorded,
      corpus,
      ...small,
    });
    expect(byValue.outcomes[0]?.status).toBe("failed");
    expect(byValue.outcomes[0]?.summary).toMatch(/relative difference/);
  });
});
