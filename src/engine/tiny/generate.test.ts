import { afterAll, describe, expect, it } from "vitest";
import { decodeTable, dequantizeMxfp4, FP8_E4M3FN } from "../../formats/index.js";
import { Engine } from "../engine.js";
import type { HostTensor } from "../loader/host-tensor.js";
import type { StepOutput } from "../request.js";
import { readCorpus } from "./corpus.js";
import type { TinyModelFiles } from "./files.js";
import { generateTinyModel, tinyFilesToModel } from "./generate.js";
import { findTinySize, TINY_SIZES, type TinySize, tinyParameterCount } from "./sizes.js";

const corpus = await readCorpus();
const tiny = findTinySize("tiny") as TinySize;
const engines: Engine[] = [];
afterAll(() => Promise.all(engines.map((e) => e.close())));

/** The same model with every quantized matrix replaced by its f32 dequantization. */
function dequantized(files: TinyModelFiles): TinyModelFiles {
  const fp8 = decodeTable(FP8_E4M3FN);
  const tensors = new Map<string, HostTensor>();
  for (const [name, t] of files.tensors) {
    if (name.endsWith("_scales") || name.endsWith("_scale_inv")) continue;
    if (name.endsWith("_blocks")) {
      const base = name.slice(0, -"_blocks".length);
      const scales = files.tensors.get(`${base}_scales`) as HostTensor;
      const rows = t.shape[0] as number;
      const cols = (t.shape[1] as number) * 32;
      tensors.set(base, {
        dtype: "F32",
        shape: [rows, cols],
        data: dequantizeMxfp4(t.data as Uint8Array, scales.data as Uint8Array),
      });
    } else if (t.dtype === "F8_E4M3") {
      const inv = files.tensors.get(`${name}_scale_inv`) as HostTensor;
      const [rows, cols] = t.shape as [number, number];
      const tileCols = Math.ceil(cols / 128);
      const out = new Float32Array(rows * cols);
      for (let r = 0; r < rows; r++) {
        for (let c = 0; c < cols; c++) {
          const s = inv.data[Math.floor(r / 128) * tileCols + Math.floor(c / 128)] as number;
          out[r * cols + c] = (fp8[t.data[r * cols + c] as number] as number) * s;
        }
      }
      tensors.set(name, { dtype: "F32", shape: t.shape, data: out });
    } else tensors.set(name, t);
  }
  return { ...files, tensors };
}

async function greedy(files: TinyModelFiles): Promise<StepOutput[]> {
  const model = await tinyFilesToModel("t", files);
  const engine = new Engine(model, { threads: 2 });
  engines.push(engine);
  const out: StepOutput[] = [];
  const prompt = model.tokenizer.encode("The keeper wrote down the boats.");
  for await (const o of engine.submit({
    promptTokenIds: prompt,
    maxTokens: 8,
    sampling: { temperature: 0 },
    logprobs: 2,
    ignoreEos: true,
  }))
    out.push(o);
  return out;
}

describe("tiny models", () => {
  it("are reproducible from size, seed and corpus", () => {
    const a = generateTinyModel(tiny, corpus, { seed: 1 });
    const b = generateTinyModel(tiny, corpus, { seed: 1 });
    const c = generateTinyModel(tiny, corpus, { seed: 2 });
    const q = (f: TinyModelFiles) =>
      Array.from(f.tensors.get("model.layers.0.self_attn.q_proj.weight")?.data ?? []);
    expect(q(a)).toEqual(q(b));
    expect(q(a)).not.toEqual(q(c));
    expect(a.tokenizerJson).toEqual(c.tokenizerJson);
  });

  it("count their parameters like the size table says, the smallest a few hundred thousand, the largest about 100M", () => {
    const files = generateTinyModel(tiny, corpus);
    let counted = 0;
    for (const t of files.tensors.values()) counted += t.data.length;
    expect(files.numParameters).toBe(counted);
    expect(counted).toBeGreaterThan(200_000);
    expect(counted).toBeLessThan(500_000);
    const largest = TINY_SIZES.at(-1) as TinySize;
    expect(tinyParameterCount(largest, largest.bpeVocab)).toBeGreaterThan(90e6);
  });

  for (const dtype of ["fp8", "mxfp4", "bf16"] as const) {
    it(`${dtype}: decoding inside the matmul gives exactly what the dequantized f32 model gives`, async () => {
      const files = generateTinyModel(tiny, corpus, { dtype });
      expect([...files.tensors.values()].some((t) => t.dtype !== "F32")).toBe(true);
      const reference = dtype === "bf16" ? bf16ToF32(files) : dequantized(files);
      expect(await greedy(files)).toEqual(await greedy(reference));
    });
  }
});

function bf16ToF32(files: TinyModelFiles): TinyModelFiles {
  const tensors = new Map<string, HostTensor>();
  for (const [name, t] of files.tensors) {
    if (t.dtype !== "BF16") {
      tensors.set(name, t);
      continue;
    }
    const bits = new Uint32Array(t.data.length);
    for (let i = 0; i < bits.length; i++) bits[i] = (t.data[i] as number) << 16;
    tensors.set(name, { dtype: "F32", shape: t.shape, data: new Float32Array(bits.buffer) });
  }
  return { ...files, tensors };
}
