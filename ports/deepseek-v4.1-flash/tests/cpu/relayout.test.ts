import { cp, mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../../../../src/common/errors.js";
import {
  Engine,
  type LoadedModel,
  loadModel,
  type StepOutput,
  writeTinyModel,
} from "../../../../src/engine/index.js";
import { parseV4Config } from "../../../../src/engine/models/deepseek-v4.js";
import { v4DeepseekTensors } from "../../../../src/engine/models/deepseek-v4-names.js";
import { collect } from "../../../../src/engine/tests/engines.js";
import {
  convertWeights,
  openCheckpoint,
  openSafetensors,
  writeCheckpoint,
} from "../../../../src/formats/index.js";
import { runGateSession } from "../../../../src/gates/session.js";
import { portReference } from "../../../../test/helpers/port-reference.js";

// The tiny checkpoint as `bringup up` writes it, and its MXFP4 experts re-laid out in halves order
// as the port's weights gate converts them (`bringup weights convert --to mxfp4 --layout halves`).
const ref = await portReference("deepseek-v4.1-flash");
let root: string;
let source: LoadedModel;
let halves: LoadedModel;
const engines: Engine[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-v4-halves-"));
  await writeTinyModel(join(root, "ocp"), ref.referenceFiles());
  await convertWeights(join(root, "ocp"), join(root, "halves"), {
    to: "mxfp4",
    layout: "halves",
    workers: 0,
  });
  source = await loadModel(join(root, "ocp"));
  halves = await loadModel(join(root, "halves"));
});
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await rm(root, { recursive: true, force: true });
});

/** Prompt logprobs (top 5 at every position) and 12 greedy tokens with theirs, past a compressed row of 32. */
async function scored(model: LoadedModel, mxfp4: string): Promise<StepOutput[]> {
  const e = new Engine(model, { threads: 2, maxModelLen: 256, switches: { mxfp4 } });
  engines.push(e);
  const prompt = model.tokenizer.encode(ref.corpus.slice(0, 600)).slice(0, 70);
  return collect(
    e.submit({
      promptTokenIds: prompt,
      maxTokens: 12,
      promptLogprobs: 5,
      logprobs: 5,
      sampling: { temperature: 0 },
      ignoreEos: true,
    }),
  );
}

async function errorOf(run: () => Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await run();
  } catch (error) {
    if (isBringupError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("no BringupError was thrown");
}

describe("DeepSeek-V4.1-Flash's MXFP4 experts re-laid out in halves order", () => {
  it("are stored as W_hblocks, every expert tensor of the source re-laid out", async () => {
    const [a, b] = [await openCheckpoint(join(root, "ocp")), await openCheckpoint(join(root, "halves"))];
    try {
      const ocp = a.tensors.filter((t) => t.name.endsWith("_blocks")).map((t) => t.name);
      expect(ocp.length).toBeGreaterThan(0);
      expect(b.tensors.filter((t) => t.name.endsWith("_blocks"))).toEqual([]);
      expect(b.tensors.filter((t) => t.name.endsWith("_hblocks")).map((t) => t.name)).toEqual(
        ocp.map((n) => n.replace(/_blocks$/, "_hblocks")),
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("give the engine the same logits bit for bit, on the fused decode and unpacked", async () => {
    const expected = await scored(source, "fused");
    expect(expected.length).toBe(12);
    expect(await scored(halves, "fused")).toEqual(expected);
    expect(await scored(halves, "unpacked")).toEqual(expected);
  });

  it("pass the weights gate, which fails on one changed byte of one expert, naming its weight", async () => {
    const spec = { kind: "weights-bit-identity", conversion: "halves re-layout" } as const;
    const passed = await runGateSession([spec], {
      sourceCheckpoint: join(root, "ocp"),
      convertedCheckpoint: join(root, "halves"),
    });
    expect(passed.outcomes[0]?.status).toBe("passed");
    await cp(join(root, "halves"), join(root, "corrupt"), { recursive: true });
    const name = "model.layers.1.mlp.experts.down_proj_hblocks";
    const file = join(root, "corrupt", "model.safetensors");
    const st = await openSafetensors(file);
    // Expert 5's last code byte.
    const info = st.tensor(name);
    const at = st.dataStart + (info.dataOffsets[0] as number) + ((info.byteLength / 8) * 6 - 1);
    await st.close();
    const handle = await open(file, "r+");
    const byte = Buffer.alloc(1);
    await handle.read(byte, 0, 1, at);
    byte[0] = (byte[0] as number) ^ 0x80;
    await handle.write(byte, 0, 1, at);
    await handle.close();
    const failed = await runGateSession([spec], {
      sourceCheckpoint: join(root, "ocp"),
      convertedCheckpoint: join(root, "corrupt"),
    });
    expect(failed.outcomes[0]?.status).toBe("failed");
    expect(failed.outcomes[0]?.summary).toMatch(
      /^1 of \d+ weights differ.*\(model\.layers\.1\.mlp\.experts\.down_proj\)$/,
    );
  });

  it("are refused for the checkpoint in DeepSeek's released names, whose FP4 experts are per expert", async () => {
    const files = ref.referenceFiles();
    const dir = join(root, "deepseek-names");
    await writeTinyModel(dir, {
      ...files,
      tensors: v4DeepseekTensors(files.tensors, parseV4Config(files.config, "tiny")),
    });
    const refused = await errorOf(() =>
      convertWeights(dir, join(root, "no"), { to: "mxfp4", layout: "halves", workers: 0 }),
    );
    expect(refused.code).toBe("RELAYOUT_INVALID");
    expect(refused.message).toMatch(
      /no MXFP4 weight stored as W_blocks \+ W_scales .* per-expert w1\.weight/,
    );
  });

  it("refuse an order the engine does not know, halves codes without the marker, and a missing scale, by name", async () => {
    const config = JSON.parse(await readFile(join(root, "halves", "config.json"), "utf8"));
    await cp(join(root, "halves"), join(root, "unknown"), { recursive: true });
    await writeFile(
      join(root, "unknown", "config.json"),
      JSON.stringify({ ...config, mxfp4_layout: "quarters" }),
    );
    const unknown = await errorOf(() => loadModel(join(root, "unknown")));
    expect(unknown.code).toBe("MODEL_MXFP4_LAYOUT_UNKNOWN");
    expect(unknown.message).toMatch(/mxfp4_layout "quarters" is not an MXFP4 code order/);
    const { mxfp4_layout: _, ...unmarked } = config;
    await writeFile(join(root, "unknown", "config.json"), JSON.stringify(unmarked));
    expect((await errorOf(() => loadModel(join(root, "unknown")))).message).toMatch(
      /_hblocks: MXFP4 codes in halves order, but .* has no mxfp4_layout/,
    );

    // The re-laid-out checkpoint without one expert scale tensor.
    const dropped = "model.layers.2.mlp.experts.gate_up_proj_scales";
    await cp(join(root, "halves"), join(root, "no-scale"), { recursive: true });
    await rm(join(root, "no-scale", "model.safetensors"));
    const ck = await openCheckpoint(join(root, "halves"));
    try {
      const kept = ck.tensors.filter((t) => t.name !== dropped);
      const tensors = [];
      for (const t of kept)
        tensors.push({
          name: t.name,
          dtype: t.dtype,
          shape: [...t.shape],
          data: await ck.readTensor(t.name),
        });
      await writeCheckpoint(join(root, "no-scale"), tensors);
    } finally {
      await ck.close();
    }
    const missing = await errorOf(() => loadModel(join(root, "no-scale")));
    expect(missing.code).toBe("MODEL_WEIGHT_MISSING");
    expect(missing.message).toMatch(/tensor model\.layers\.2\.mlp\.experts\.gate_up_proj_scales is missing/);
  });
});
