import { cp, mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gate as GateSpec } from "../catalog/index.js";
import { findTinySize, generateTinyModel, readCorpus, writeTinyModel } from "../engine/index.js";
import { openSafetensors } from "../formats/index.js";
import { runGateSession } from "./session.js";

const spec: GateSpec = { kind: "weights-bit-identity", conversion: "copy of the checkpoint" };
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "bringup-weights-gate-"));
  const size = findTinySize("tiny");
  if (!size) throw new Error("tiny size missing");
  await writeTinyModel(join(dir, "source"), generateTinyModel(size, await readCorpus()));
  await cp(join(dir, "source"), join(dir, "same"), { recursive: true });
  await cp(join(dir, "source"), join(dir, "flipped"), { recursive: true });
  // Flip the lowest bit of one f32 of the LM head.
  const file = join(dir, "flipped", "model.safetensors");
  const st = await openSafetensors(file);
  const info = st.tensor("lm_head.weight");
  const at = st.dataStart + (info.dataOffsets[0] as number);
  await st.close();
  const handle = await open(file, "r+");
  const byte = Buffer.alloc(1);
  await handle.read(byte, 0, 1, at);
  byte[0] = (byte[0] as number) ^ 1;
  await handle.write(byte, 0, 1, at);
  await handle.close();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("weights bit-identity gate", () => {
  it("passes an identical conversion and fails one with a flipped bit, naming the weight", async () => {
    const same = await runGateSession([spec], {
      sourceCheckpoint: join(dir, "source"),
      convertedCheckpoint: join(dir, "same"),
    });
    expect(same.outcomes[0]?.status).toBe("passed");
    const flipped = await runGateSession([spec], {
      sourceCheckpoint: join(dir, "source"),
      convertedCheckpoint: join(dir, "flipped"),
    });
    expect(flipped.outcomes[0]?.status).toBe("failed");
    expect(flipped.outcomes[0]?.summary).toMatch(/1 of \d+ weights differ.*lm_head\.weight/);
  });

  it("is not run without both checkpoints", async () => {
    const { outcomes } = await runGateSession([spec], { sourceCheckpoint: join(dir, "source") });
    expect(outcomes[0]?.code).toBe("GATE_NEEDS_CHECKPOINTS");
  });
});
