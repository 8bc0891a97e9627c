import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { isBringupError } from "../../../../src/common/errors.js";
import { type DecoderConfig, readCorpus, type TinyModelFiles } from "../../../../src/engine/index.js";
import { mimoTinyModel, parseMimoConfig } from "../../../../src/engine/models/mimo.js";
import { loadFiles, referenceConfig } from "./reference.js";

let config: Record<string, unknown>;
let corpus: string;
let files: TinyModelFiles;

beforeAll(async () => {
  config = await referenceConfig();
  corpus = await readCorpus();
  files = mimoTinyModel(config, corpus, { seed: 0 });
});

/** sha256 of every tensor's name, dtype, shape and bytes, in order. */
function digest(f: TinyModelFiles): string {
  const hash = createHash("sha256");
  for (const [name, t] of f.tensors) {
    hash.update(`${name} ${t.dtype} ${t.shape.join(",")}\n`);
    hash.update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return hash.digest("hex");
}

describe("the tiny reference model", () => {
  it("has the same bytes for the same config, corpus and seed, and others for another seed", () => {
    const again = mimoTinyModel(config, corpus, { seed: 0 });
    expect(digest(again)).toBe(digest(files));
    expect(again.tokenizerJson).toEqual(files.tokenizerJson);
    const other = mimoTinyModel(config, corpus, { seed: 1 });
    expect(digest(other)).not.toBe(digest(files));
    expect(other.tensors.get("model.layers.3.self_attn.attention_sink_bias")?.data).not.toEqual(
      files.tensors.get("model.layers.3.self_attn.attention_sink_bias")?.data,
    );
  });

  it("holds every tensor the config implies: sinks on sliding layers, a correction bias per MoE layer", async () => {
    const spec = parseMimoConfig(config);
    const names = [...files.tensors.keys()];
    const sinks = names
      .filter((n) => n.endsWith(".self_attn.attention_sink_bias"))
      .map((n) => Number(n.split(".")[2]));
    expect(sinks).toEqual(spec.layers.flatMap((l, i) => (l.attention.sinks ? [i] : [])).sort());
    expect(sinks).not.toContain(0);
    const biased = names.filter((n) => n.endsWith(".mlp.gate.e_score_correction_bias"));
    expect(biased).toHaveLength(15);
    expect(names).toContain("model.layers.0.mlp.gate_proj.weight");
    expect(names).toContain("model.layers.1.mlp.experts.7.down_proj.weight");
    expect(files.tensors.get("model.layers.5.self_attn.v_proj.weight")?.shape).toEqual([32, 64]);
    expect(files.tensors.get("model.layers.1.self_attn.k_proj.weight")?.shape).toEqual([48, 64]);
    // The BPE fills the vocabulary the config asks for, and the engine's loader takes every tensor.
    expect(files.config.vocab_size).toBe(512);
    const model = await loadFiles(files, "mimo-tiny");
    expect((model.config as DecoderConfig).layers).toEqual(spec.layers);
    expect(model.numParameters).toBe(files.numParameters);
  });

  it("refuses a vocabulary with no room for merges", () => {
    try {
      mimoTinyModel({ ...config, vocab_size: 200 }, corpus);
      expect.unreachable();
    } catch (error) {
      expect(isBringupError(error) && error.code).toBe("MODEL_CONFIG_INVALID");
      expect((error as Error).message).toMatch(/vocab_size: 200 leaves no room for BPE merges/);
    }
  });
});
