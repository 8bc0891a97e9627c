import { describe, expect, it } from "vitest";
import type { HostTensor } from "../loader/host-tensor.js";
import { countParameters, tinyModelFiles, tinyTokenizer } from "./files.js";

const corpus = "the cat sat on the mat, the cat sat on the hat. ".repeat(8);

describe("tinyTokenizer", () => {
  it("trains the BPE to the asked size and appends the specials, eos first", () => {
    const tok = tinyTokenizer(corpus, 264, 128);
    expect(tok.vocab).toBe(tok.files.size);
    expect(tok.vocab).toBeGreaterThan(264);
    expect(tok.eos).toEqual([tok.files.specialIds["<|endoftext|>"], tok.files.specialIds["<|im_end|>"]]);
    expect(tok.files.tokenizerConfig.model_max_length).toBe(128);
  });
});

describe("tinyModelFiles", () => {
  const tok = tinyTokenizer(corpus, 260, 64);
  const f32 = (shape: number[]): HostTensor => ({
    dtype: "F32",
    shape,
    data: new Float32Array(shape.reduce((a, b) => a * b, 1)),
  });
  const tensors = new Map([
    ["model.norm.weight", f32([4])],
    ["lm_head.weight", f32([3, 4])],
    ["model.embed_tokens.weight", f32([3, 4])],
  ]);

  it("puts tensors in name order, counts their elements and stops generation at eos", () => {
    const files = tinyModelFiles({ model_type: "llama" }, tok, tensors);
    expect([...files.tensors.keys()]).toEqual([
      "lm_head.weight",
      "model.embed_tokens.weight",
      "model.norm.weight",
    ]);
    expect(files.numParameters).toBe(28);
    expect(countParameters(tensors)).toBe(28);
    expect(files.generationConfig).toEqual({ eos_token_id: tok.eos, do_sample: false });
    expect(files.tokenizerJson).toBe(tok.files.tokenizerJson);
    expect(files.tokenizerConfig).toBe(tok.files.tokenizerConfig);
  });

  it("counts packed MXFP4 as two values a byte and scales as none, as the loader does", () => {
    const mxfp4 = new Map<string, HostTensor>([
      ["experts.down_proj_blocks", { dtype: "U8", shape: [2, 4, 1, 16], data: new Uint8Array(128) }],
      ["experts.down_proj_scales", { dtype: "U8", shape: [2, 4, 1], data: new Uint8Array(8) }],
      ["gate.tid2eid", { dtype: "I32", shape: [3, 2], data: new Uint8Array(24) }],
    ]);
    expect(countParameters(mxfp4)).toBe(256 + 0 + 6);
  });

  it("keeps a parameter count the caller gives (quantized tensors count as their dense shape)", () => {
    expect(tinyModelFiles({}, tok, tensors, 1000).numParameters).toBe(1000);
  });
});
