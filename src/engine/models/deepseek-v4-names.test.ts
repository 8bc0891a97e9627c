import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bringupErrorOf, portReference } from "../../../test/helpers/port-reference.js";
import { promptBatch } from "../../../test/helpers/prompt-batch.js";
import { lanesIndex } from "../../formats/fp8-lanes.js";
import { quadsIndex, toQuadsInPlace } from "../../formats/fp8-quads.js";
import {
  decodeE8m0,
  dequantizeMxfp4,
  encodeMinifloat,
  FP8_E4M3FN,
  mxfp4ToFp8Block32,
  packCheckpoint,
  verifyPacked,
} from "../../formats/index.js";
import { MatmulPool } from "../kernels/pool.js";
import type { HostTensor } from "../loader/host-tensor.js";
import { loadModel } from "../loader/load-model.js";
import { isDraftModel } from "../model/draft-model.js";
import type { LoadedModel } from "../model/loaded-model.js";
import type { TinyModelFiles } from "../tiny/files.js";
import { writeTinyModel } from "../tiny/write.js";
import { parseV4Config, v4Parameters } from "./deepseek-v4.js";
import { v4DeepseekTensors, v4NameTable, v4Naming } from "./deepseek-v4-names.js";

const ref = await portReference("deepseek-v4.1-flash");
const files = ref.referenceFiles();
const config = parseV4Config(files.config, "tiny");
const pool = new MatmulPool(1, { simd: false });
afterAll(() => pool.close());
const switches = new Map([["v4_attention", "sparse"]]);

/** The same model files with their tensors `tensors`. */
const withTensors = (tensors: ReadonlyMap<string, HostTensor>): TinyModelFiles => ({ ...files, tensors });
const deepseek = (tensors = files.tensors, scales: "f32" | "e8m0" = "f32") =>
  withTensors(v4DeepseekTensors(tensors, config, scales));

/** One prefill of `tokens` on fresh state: the main model's logits and, from its streams, the MTP layer's. */
function logits(model: LoadedModel, tokens: number[]): { main: Float32Array; mtp: Float32Array } {
  const m = model.model;
  const head = m.drafter;
  if (!isDraftModel(head)) throw new Error(head.reason);
  const { batch, storage } = promptBatch([...m.states(switches), head.states(switches)], tokens);
  const ctx = { batch, pool, switches };
  const step = m.step(ctx, storage.slice(0, -1));
  const mtp = head.forward(ctx, storage.at(-1) as (typeof storage)[number], step.streams).logits;
  return { main: step.logits, mtp };
}

const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
// Past the window (32), several compressed sparse rows (4) and heavily compressed rows (32).
const tokens = Array.from({ length: 70 }, (_, i) => (i * 37 + 11) % config.vocabSize);
const reference = logits(ref.build("transformers", files), tokens);

/**
 * `tensors` with every linear the release stores in FP8 (per the name table's `linear` pairs,
 * experts aside) as FP8 E4M3 with power-of-two block scales, as DeepSeek's E8M0 ones are.
 */
function fp8Linears(tensors: ReadonlyMap<string, HostTensor>): Map<string, HostTensor> {
  const linears = new Set(
    v4NameTable(config)
      .pairs.filter((p) => p.linear)
      .map((p) => p.family),
  );
  const out = new Map(tensors);
  for (const { decl } of v4Parameters(config, config.vocabSize)) {
    const t = tensors.get(decl.name);
    if (!linears.has(decl.name) || t?.dtype !== "F32" || t.shape.length !== 2) continue;
    const [rows, cols] = t.shape as [number, number];
    const values = t.data as Float32Array;
    const [gr, gc] = [Math.ceil(rows / 128), Math.ceil(cols / 128)];
    const scale = new Float32Array(gr * gc);
    for (let i = 0; i < rows * cols; i++) {
      const b = Math.floor(i / cols / 128) * gc + Math.floor((i % cols) / 128);
      scale[b] = Math.max(scale[b] as number, Math.abs(values[i] as number));
    }
    scale.forEach((amax, b) => {
      scale[b] = 2 ** Math.ceil(Math.log2(amax / 448));
    });
    const codes = Uint8Array.from(values, (v, i) =>
      encodeMinifloat(
        FP8_E4M3FN,
        v / (scale[Math.floor(i / cols / 128) * gc + Math.floor((i % cols) / 128)] as number),
      ),
    );
    out.set(decl.name, { dtype: "F8_E4M3", shape: t.shape, data: codes });
    out.set(`${decl.name}_scale_inv`, { dtype: "F32", shape: [gr, gc], data: scale });
  }
  return out;
}

/**
 * `tensors` with the MXFP4 expert stacks in `dtype`: f32 (decoded), or FP8 E4M3 with each block of
 * 32's E8M0 scale (re-encoded exactly, as DeepSeek-V4-Flash-Base ships FP8 experts).
 */
function expertsAs(tensors: ReadonlyMap<string, HostTensor>, dtype: "f32" | "fp8"): Map<string, HostTensor> {
  const out = new Map(tensors);
  for (const [name, blocks] of tensors) {
    if (!name.endsWith("_blocks")) continue;
    const base = name.slice(0, -"_blocks".length);
    const scales = tensors.get(`${base}_scales`) as HostTensor;
    const [E, R, groups] = scales.shape as [number, number, number];
    const shape = [E, R, groups * 32];
    out.delete(name);
    out.delete(`${base}_scales`);
    const b = blocks.data as Uint8Array;
    const sc = scales.data as Uint8Array;
    if (dtype === "f32") out.set(base, { dtype: "F32", shape, data: dequantizeMxfp4(b, sc) });
    else {
      out.set(base, { dtype: "F8_E4M3", shape, data: mxfp4ToFp8Block32(b, sc) });
      out.set(`${base}_scale_inv`, {
        dtype: "F32",
        shape: scales.shape,
        data: Float32Array.from(sc, decodeE8m0),
      });
    }
  }
  return out;
}

describe("DeepSeek-V4 in DeepSeek's released tensor names (models/deepseek-v4-names.ts)", () => {
  it("writes the tiny checkpoint in DeepSeek's names: per-expert FP4 (I8) with E8M0 scales, nothing of transformers'", () => {
    const native = deepseek().tensors;
    expect(native.get("embed.weight")).toBe(files.tensors.get("model.embed_tokens.weight"));
    expect(native.get("layers.1.attn.indexer.compressor.ape")).toBeDefined();
    const w1 = native.get("layers.0.ffn.experts.7.w1.weight");
    const I = config.layers[0]?.moe.intermediateSize as number;
    expect([w1?.dtype, w1?.shape]).toEqual(["I8", [I, config.hiddenSize / 2]]);
    expect(native.get("layers.0.ffn.experts.7.w3.scale")?.dtype).toBe("F8_E8M0");
    expect(native.get("mtp.0.ffn.experts.0.w2.weight")?.shape).toEqual([config.hiddenSize, I / 2]);
    expect([...native.keys()].filter((n) => n.startsWith("model.") || n.startsWith("lm_head"))).toEqual([]);
    expect(v4Naming([...native.keys()], config, "tiny")).toBe("deepseek");
    expect(v4Naming([...files.tensors.keys()], config, "tiny")).toBe("transformers");
  });

  it("loads it with logits bit-identical to the transformers-named checkpoint, the MTP layer's included", () => {
    const out = logits(ref.build("deepseek", deepseek()), tokens);
    expect(bytes(out.main).equals(bytes(reference.main))).toBe(true);
    expect(bytes(out.mtp).equals(bytes(reference.mtp))).toBe(true);
  });

  it("keeps FP8 linears FP8 with E8M0 or F32 block scales (wo_a widened exactly): bit-identical to the transformers-named FP8 checkpoint", () => {
    const fp8 = fp8Linears(files.tensors);
    const hf = logits(ref.build("transformers-fp8", withTensors(fp8)), tokens);
    // FP8 moves the logits: the scales and the widened wo_a were read, not dropped.
    expect(bytes(hf.main).equals(bytes(reference.main))).toBe(false);
    for (const [scales, dtype] of [
      ["e8m0", "F8_E8M0"],
      ["f32", "F32"],
    ] as const) {
      const native = deepseek(fp8, scales);
      expect(native.tensors.get("layers.2.attn.wo_a.scale")?.dtype).toBe(dtype);
      expect(native.tensors.get("layers.2.attn.wo_a.weight")?.dtype).toBe("F8_E4M3");
      const out = logits(ref.build(`deepseek-fp8-${scales}`, native), tokens);
      expect(bytes(out.main).equals(bytes(hf.main))).toBe(true);
      expect(bytes(out.mtp).equals(bytes(hf.mtp))).toBe(true);
    }
  });

  it("loads the FP8 one from safetensors on disk (I8 experts, E8M0 scales), and packed, as the transformers-named one", async () => {
    const root = await mkdtemp(join(tmpdir(), "bringup-v4-names-"));
    try {
      const fp8 = fp8Linears(files.tensors);
      await writeTinyModel(join(root, "deepseek"), deepseek(fp8, "e8m0"));
      await writeTinyModel(join(root, "transformers"), withTensors(fp8));
      const loaded = await loadModel(join(root, "deepseek"));
      const hf = await loadModel(join(root, "transformers"));
      expect(loaded.numParameters).toBe(hf.numParameters);
      const main = bytes(logits(hf, tokens).main);
      expect(bytes(logits(loaded, tokens).main).equals(main)).toBe(true);
      // Packed as stored (I8 experts, E8M0 scales, the I32 tid2eid), it loads to the same logits.
      await packCheckpoint(join(root, "deepseek"), join(root, "packed"), 1);
      const proof = await verifyPacked(join(root, "deepseek"), join(root, "packed"));
      expect(proof.ok).toBe(true);
      expect(proof.weights.map((w) => w.formatA)).toEqual(expect.arrayContaining(["I8", "F8_E8M0", "I32"]));
      const packed = await loadModel(join(root, "packed"));
      expect(packed.numParameters).toBe(hf.numParameters);
      expect(bytes(logits(packed, tokens).main).equals(main)).toBe(true);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("loads FP8 experts from disk, DeepSeek-named or stacked, re-laid in quads or lanes order, to the logits of the codes in file order", async () => {
    const root = await mkdtemp(join(tmpdir(), "bringup-v4-lanes-"));
    try {
      const hfTensors = expertsAs(fp8Linears(files.tensors), "fp8");
      const want = bytes(logits(ref.build("transformers-fp8-experts", withTensors(hfTensors)), tokens).main);
      await writeTinyModel(join(root, "deepseek"), deepseek(hfTensors, "e8m0"));
      await writeTinyModel(join(root, "transformers"), withTensors(hfTensors));
      for (const dir of ["deepseek", "transformers"]) {
        const loaded = await loadModel(join(root, dir));
        const relaid = JSON.stringify(loaded.model, (_key, v) => (ArrayBuffer.isView(v) ? undefined : v));
        // Quads order where a matrix's rows come in fours, lanes order where not.
        expect(relaid).toContain('"fp8Order":"quads"');
        expect(relaid).toContain('"fp8Order":"lanes"');
        expect(bytes(logits(loaded, tokens).main).equals(want)).toBe(true);
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("splits FP8 expert stacks in quads order into parts that read the same codes", () => {
    const fileOrder = expertsAs(files.tensors, "fp8");
    // Each stack as a load lays it: quads order, [experts, rows, cols] rows in fours here.
    const placed = new Map(
      [...fileOrder].map(([name, t]): [string, HostTensor] => {
        if (t.dtype !== "F8_E4M3" || t.shape.length !== 3) return [name, t];
        expect((t.shape[1] as number) % 4).toBe(0);
        const data = toQuadsInPlace((t.data as Uint8Array).slice(), t.shape[2] as number);
        return [name, { ...t, data, fp8Order: "quads" }];
      }),
    );
    const [want, got] = [v4DeepseekTensors(fileOrder, config), v4DeepseekTensors(placed, config)];
    const orders = new Set<string>();
    for (const [name, t] of got) {
      if (t.dtype !== "F8_E4M3" || t.fp8Order === undefined) continue;
      orders.add(t.fp8Order);
      const cols = t.shape.at(-1) as number;
      const codes = t.data as Uint8Array;
      const at = (i: number) => (t.fp8Order === "quads" ? quadsIndex(i, cols) : lanesIndex(i));
      const read = Uint8Array.from(codes, (_, i) => codes[at(i)] as number);
      expect({
        name,
        same: Buffer.from(read).equals(Buffer.from(want.get(name)?.data as Uint8Array)),
      }).toEqual({
        name,
        same: true,
      });
    }
    expect(orders.has("quads")).toBe(true);
  });

  it("stacks experts stored in f32 or in FP8 with E8M0 scales per 32 as the transformers-named ones", () => {
    for (const dtype of ["f32", "fp8"] as const) {
      const hfTensors = expertsAs(files.tensors, dtype);
      const native = deepseek(hfTensors, "e8m0");
      expect(native.tensors.get("layers.1.ffn.experts.2.w3.weight")?.dtype).toBe(
        dtype === "f32" ? "F32" : "F8_E4M3",
      );
      const hf = logits(ref.build(`transformers-${dtype}`, withTensors(hfTensors)), tokens);
      const out = logits(ref.build(`deepseek-${dtype}`, native), tokens);
      expect(bytes(out.main).equals(bytes(hf.main))).toBe(true);
      expect(bytes(out.mtp).equals(bytes(hf.mtp))).toBe(true);
    }
  });

  const refused = (edit: (t: Map<string, HostTensor>) => void) => {
    const t = new Map(deepseek().tensors);
    edit(t);
    return bringupErrorOf(() => ref.build("deepseek", withTensors(t)));
  };

  it("refuses a missing, extra or misshapen tensor, naming it as DeepSeek's checkpoint stores it", () => {
    const missing = refused((t) => t.delete("layers.1.ffn.experts.5.w3.weight"));
    expect(missing.code).toBe("MODEL_WEIGHT_MISSING");
    expect(missing.message).toContain("tensor layers.1.ffn.experts.5.w3.weight is missing");
    const firstExpert = refused((t) => t.delete("layers.3.ffn.experts.0.w1.weight"));
    expect(firstExpert.message).toContain("tensor layers.3.ffn.experts.0.w1.weight is missing");
    const missingLinear = refused((t) => t.delete("layers.2.attn.wkv.weight"));
    expect(missingLinear.message).toContain("tensor layers.2.attn.wkv.weight is missing");
    const extra = refused((t) =>
      t.set("layers.0.attn.compressor.ape", t.get("layers.2.attn.compressor.ape") as HostTensor),
    );
    expect(extra.message).toContain("tensor layers.0.attn.compressor.ape is in the checkpoint but no layer");
    const extraExpert = refused((t) =>
      t.set("layers.0.ffn.experts.8.w1.weight", t.get("layers.0.ffn.experts.0.w1.weight") as HostTensor),
    );
    expect(extraExpert.message).toContain(
      "tensor layers.0.ffn.experts.8.w1.weight is not a DeepSeek-V4 tensor",
    );
    const misshapen = refused((t) => {
      const s = t.get("layers.3.attn.attn_sink") as HostTensor;
      t.set("layers.3.attn.attn_sink", { ...s, shape: [1, ...s.shape] });
    });
    expect(misshapen.message).toMatch(
      /layers\.3\.attn\.attn_sink has shape \[1, \d+\] but config\.json implies/,
    );
    const expert = refused((t) => {
      const s = t.get("layers.2.ffn.experts.3.w2.scale") as HostTensor;
      t.set("layers.2.ffn.experts.3.w2.scale", { ...s, shape: [s.shape[1] as number, s.shape[0] as number] });
    });
    expect(expert.message).toContain("layers.2.ffn.experts.3.w2.scale has shape");
  });

  it("writes DeepSeek's names only for declared tensors, and E8M0 scales only for powers of two", () => {
    const extra = new Map(files.tensors).set("model.layers.0.self_attn.rotary.inv_freq", {
      dtype: "F32",
      shape: [1],
      data: new Float32Array(1),
    });
    expect(bringupErrorOf(() => v4DeepseekTensors(extra, config)).message).toMatch(
      /^model\.layers\.0\.self_attn\.rotary\.inv_freq has no DeepSeek-V4 name/,
    );
    const fp8 = fp8Linears(files.tensors);
    const name = "model.layers.1.self_attn.q_a_proj.weight_scale_inv";
    fp8.set(name, { ...(fp8.get(name) as HostTensor), data: Float32Array.of(0.3) });
    expect(bringupErrorOf(() => v4DeepseekTensors(fp8, config, "e8m0")).message).toContain(
      `${name} holds 0.30000001192092896 at index 0, which E8M0 cannot store`,
    );
  });

  it("refuses mixed and unknown names by name", () => {
    const mixed = refused((t) => {
      t.set("model.norm.weight", t.get("norm.weight") as HostTensor);
      t.delete("norm.weight");
    });
    expect(mixed.message).toMatch(
      /tensor model\.norm\.weight is in transformers' naming but .* \(DeepSeek's name for it is norm\.weight\)\.$/,
    );
    const unknown = refused((t) =>
      t.set("layers.0.attn.wq_c.weight", t.get("layers.0.attn.wq_a.weight") as HostTensor),
    );
    expect(unknown.code).toBe("MODEL_WEIGHTS_MISMATCH");
    expect(unknown.message).toContain(
      "tensor layers.0.attn.wq_c.weight is not a DeepSeek-V4 tensor of this config.json",
    );
  });
});
